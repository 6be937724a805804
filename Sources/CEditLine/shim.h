// libedit (Debian libedit-dev) through its readline-compatible interface: readline, add_history,
// read_history, write_history. Used only by cairn-cli's interactive prompt.
#include <stdio.h>
#include <editline/readline.h>
