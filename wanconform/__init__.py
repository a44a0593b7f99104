"""wanconform: an executable model of Geode/GemFire WAN gateways and a conformance harness."""
