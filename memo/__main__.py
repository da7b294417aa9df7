from memo.cli import main

main()
