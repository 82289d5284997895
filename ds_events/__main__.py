from ds_events.cli import main

main()
