/*
 * The captures and lists the benchmarks read are made by the build
 * (tests/traffic/gen_traffic.py, into build/tests/traffic): a missing one is reported in
 * one line that names it and says how it is made.
 */
#ifndef BENCH_INPUT_H
#define BENCH_INPUT_H

#include <stdbool.h>

/* True, after one line on stderr from prog, when path cannot be read. */
bool bench_input_missing(const char *prog, const char *path);

#endif
