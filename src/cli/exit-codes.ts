/** Exit codes of every command (the README's "Commands"): 0 done, 1 failed, 2 bad usage or config. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
