//go:build tools

package tools

import _ "github.com/toml-lang/toml-test/cmd/toml-test"
