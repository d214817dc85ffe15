import sys

try:
    from sweep.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command is still starting: nothing was done yet
    from sweep.errors import INTERRUPTED_LINE

    print(INTERRUPTED_LINE, file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":  # spawned worker processes import this module too
    main()
