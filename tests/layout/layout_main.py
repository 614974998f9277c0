"""What the layout checks share: their command line (SOURCE_ROOT, or --self-test and its
arguments) and how a self-test reports one planted case."""
import sys


def run(check, self_test, problems_are):
    """A check's main(): lists what check(SOURCE_ROOT) finds, or runs self_test(*args)."""
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        return self_test(*args[1:])
    problems = check(args[0])
    for p in problems:
        print(p)
    print(f"{len(problems)} {problems_are}")
    return 1 if problems else 0


def planted(case, caught, should_catch=True):
    """Prints what a planted case came to; 1 when that is not what it should come to."""
    verdict = "caught" if caught else "passed"
    if caught != should_catch:
        print(f"self-test: {case} was {verdict}, should not be")
        return 1
    print(f"self-test: {verdict} {case}")
    return 0
