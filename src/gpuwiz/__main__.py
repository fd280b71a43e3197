from gpuwiz.cli import main

raise SystemExit(main())
