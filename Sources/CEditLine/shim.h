// libedit (Debian libedit-dev) through its readline-compatible interface: readline, add_history,
// read_history, write_history, tab completion. Used only by cairn-cli's interactive prompt.
#include <stdio.h>
#include <editline/readline.h>

// libedit's completion state is a set of C globals; these accessors let Swift 6 reach them
// without touching shared mutable globals directly (cairn-cli's Completion).
static inline void cairn_set_completion_entry(rl_compentry_func_t *f) { rl_completion_entry_function = f; }
static inline int cairn_completion_point(void) { return rl_point; }
static inline const char *cairn_completion_line(void) { return rl_line_buffer; }

// libedit's own signal handlers race with the threads of cairn-cli's async runtime: a hangup
// (a closed terminal or SSH session) handled while readline returns dereferenced libedit's
// cleared editor and crashed with SIGSEGV. cairn-cli turns them off (rl_catch_signals) and
// installs this instead: on SIGHUP, SIGINT, SIGQUIT or SIGTERM, put the terminal back in
// cooked mode (line input, echo) and exit at once with 128 + the signal, as a shell reports
// it. Only async-signal-safe calls (tcgetattr, tcsetattr, _exit) run in the handler.
#include <signal.h>
#include <termios.h>
#include <unistd.h>

static void cairn_exit_on_signal(int signo) {
    struct termios t;
    if (tcgetattr(STDIN_FILENO, &t) == 0) {
        t.c_lflag |= ICANON | ECHO | ECHOE | ECHOK | ISIG | IEXTEN;
        t.c_iflag |= ICRNL;
        t.c_oflag |= OPOST;
        tcsetattr(STDIN_FILENO, TCSANOW, &t);
    }
    _exit(128 + signo);
}

static inline void cairn_take_over_signals(void) {
    rl_catch_signals = 0;
    struct sigaction action;
    action.sa_handler = cairn_exit_on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    int signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };
    for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; i++) sigaction(signals[i], &action, NULL);
}
