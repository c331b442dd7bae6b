from effspec.cli import main

raise SystemExit(main())
