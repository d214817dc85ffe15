from sweep.cli import main

main()
