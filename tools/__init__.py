"""Developer tools, not shipped with wanconform: the mypyc build of impl/
(`build_compiled`), `make mutation`'s score (`mutation_report`, with the list of
equivalent mutants) and the planted bugs that prove the harness has teeth
(`planted_bugs`, also a demonstration of `--impl`: run from the repository's root,
`--impl tools.planted_bugs:HighWaterMark`)."""
