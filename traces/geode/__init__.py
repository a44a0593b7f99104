"""Import a real Geode WAN configuration into SPEC §2 (R6, R7): cache.xml, gfsh, properties.

    import_geode_config([parse_site_argument("1=ln-cache.xml,ln.gfsh"), ...],
                        defines={"REMOTE_DS_ID_1": "2"})

The parts, each readable alone:

- `sites`: which files make up which site (`--site [DSID=]FILE[,FILE...]`), where the
  dsid comes from, `--define KEY=VALUE`;
- `cachexml`: what a cache.xml declares (gateways, regions, conflict resolver);
- `gfsh`: what a gfsh script or pasted transcript declares, read as gfsh reads it;
- `declarations`: the shared record of what a site declares, as written;
- `mapping`: from the declarations to the SPEC §2 configuration, with a warning where
  the model differs from Geode and an error where an input cannot work, and gfsh's
  start/stop/pause/resume gateway-sender as R37 operations (`ImportedConfig.operations`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from traces.geode.declarations import GeodeImportError
from traces.geode.mapping import WAIT_FOREVER_MS, ImportedConfig, map_sites
from traces.geode.sites import SiteArgument, parse_define, parse_site_argument, read_sites

__all__ = [
    "WAIT_FOREVER_MS",
    "GeodeImportError",
    "ImportedConfig",
    "SiteArgument",
    "import_geode_config",
    "parse_define",
    "parse_site_argument",
]


def import_geode_config(
    arguments: Sequence[SiteArgument],
    defines: Mapping[str, str] | None = None,
    allow_partial: bool = False,
) -> ImportedConfig:
    """Read every site's files and build the validated SPEC §2 configuration."""
    sites = read_sites(arguments, defines or {})
    return map_sites(sites, allow_partial=allow_partial)
