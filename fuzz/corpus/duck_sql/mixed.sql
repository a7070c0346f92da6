SELECT 'a;b', E'x\'y', $t$ ; $t$ /* /* */ */ -- c
; SELECT 2;;