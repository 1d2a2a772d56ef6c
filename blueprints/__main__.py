from blueprints.cli import main

main()
