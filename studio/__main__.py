from studio.cli import main

main()
