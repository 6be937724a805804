// libedit (Debian libedit-dev) through its readline-compatible interface: readline, add_history,
// read_history, write_history, tab completion. Used only by cairn-cli's interactive prompt.
#include <stdio.h>
#include <editline/readline.h>

// libedit's completion state is a set of C globals; these accessors let Swift 6 reach them
// without touching shared mutable globals directly (cairn-cli's Completion).
static inline void cairn_set_completion_entry(rl_compentry_func_t *f) { rl_completion_entry_function = f; }
static inline int cairn_completion_point(void) { return rl_point; }
static inline const char *cairn_completion_line(void) { return rl_line_buffer; }
