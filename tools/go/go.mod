module tether.local/tools

go 1.22

require github.com/toml-lang/toml-test v1.6.0

require (
	github.com/BurntSushi/toml v1.5.1-0.20250415140922-f225e861e346 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	zgo.at/jfmt v0.0.0-20240726113937-e6436421fade // indirect
	zgo.at/runewidth v0.1.0 // indirect
	zgo.at/termtext v1.5.0 // indirect
	zgo.at/zli v0.0.0-20241220135549-7a37675fadfd // indirect
	zgo.at/zstd v0.0.0-20240531161000-9840c0c39ff5 // indirect
)

replace github.com/BurntSushi/toml => github.com/BurntSushi/toml v1.6.0
