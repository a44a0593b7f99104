"""Read a gfsh script (`gfsh run --file`) or a transcript pasted from the docs.

Lines are read as gfsh reads a script (Geode's `Gfsh.executeScript`):

- a line whose first non-blank characters are `#` or `//` is a comment, and so is a
  `/* ... */` block; a `#` anywhere else is part of the command (`--id=ny#2`);
- a line ending with `\\` continues on the next line (joined with a space); a file that
  ends inside a continued command never runs it (a warning says so);
- `;` separates commands on one line (`\\;` is a literal `;`);
- `${NAME}` is replaced by a gfsh variable (`set variable --name=NAME --value=...`
  earlier in the script) or by `--define NAME=VALUE`; gfsh puts an empty string where
  nothing is defined, the import stops with an error instead (but for `connect` and
  the commands skipped as not configuration, where "" changes no gateway);
- words are split at blanks except inside `"..."` or `'...'`; options are
  `--name=value`, `--name value` or a bare `--flag` (= true).

Pasted documentation is read too: a `gfsh>` prompt before a command is dropped, and when
a file has prompts, its lines without one are the commands' output and are skipped. A
line starting with `--` right after a command (an option on its own line, as printed in
the docs) is joined to that command with a warning: gfsh itself would run it as a
command of its own and fail.

Commands that configure gateways are read: `create|alter|destroy gateway-sender`,
`create|destroy gateway-receiver`, `create|alter|destroy region` (their
`--gateway-sender-id` and `--enable-concurrency-checks`; `create region`'s `--type`,
read as gfsh's EnumConverter reads it, `--total-num-buckets` and `--template-region`),
`start locator|server` (their `--J=-Dgemfire.distributed-system-id=N`, the site's dsid)
and `set variable`; `list gateways`, `status gateway-sender|receiver`, `load-balance
gateway-sender` and `start gateway-receiver` change no configuration and are skipped;
`stop gateway-receiver` is skipped with a warning (the model's receiver cannot stop).
`start` (with `--clean-queues`), `stop`, `pause` and `resume gateway-sender` act on a
sender that exists: they are kept, in order, as the site's sender commands, which the
mapping turns into the operations `start_sender`, `stop_sender`, `pause_sender` and
`resume_sender` (SPEC R37, §16.9); one naming no sender of the site is an error, as gfsh
reports it. `destroy gateway-sender` of a sender that a region still names is an
error, as Geode's `AbstractGatewaySender.destroy` refuses it. Any other command naming a
gateway is an error; the rest (`connect`, `list
members`, `deploy`, ...) is not configuration and is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from traces.geode.cachexml import FAILURE_LISTENER, RECEIVER_ATTRIBUTES, SENDER_ATTRIBUTES
from traces.geode.declarations import (
    REGION_SHORTCUTS,
    GeodeImportError,
    ReceiverDeclaration,
    RegionDeclaration,
    SenderCommand,
    SenderDeclaration,
    SiteDeclarations,
    Written,
    did_you_mean,
    expand_placeholders,
    geode_boolean,
    is_partition_shortcut,
)

PROMPT = re.compile(r"\s*gfsh>\s?")
DSID_PROPERTY = "-Dgemfire.distributed-system-id="

_WORD = re.compile(r"""[^\s"']*(?:"[^"]*"|'[^']*')|\S+""")
_COMMAND_SEPARATOR = re.compile(r"(?<!\\);")
_OPTION_LINE = re.compile(r"\s*--[A-Za-z]")  # not a table rule such as "------- | ---"

_DEPLOYMENT = ("group", "groups", "member", "members")
"""Where gfsh creates a gateway; a site is one system in the model (R1), so not mapped."""

_FLAGS = frozenset(
    {
        "parallel",
        "manual-start",
        "enable-batch-conflation",
        "enable-persistence",
        "disk-synchronous",
        "group-transaction-events",
        "enforce-threads-connect-same-receiver",
        "if-not-exists",
        "skip-if-exists",
        "if-exists",
        "enable-concurrency-checks",
        "clean-queues",
    }
)
"""Options that may be given without a value (`--parallel` means `--parallel=true`)."""

_SENDER_OPTIONS = (
    *SENDER_ATTRIBUTES,
    *_DEPLOYMENT,
    "gateway-event-filter",
    "gateway-transport-filter",
    FAILURE_LISTENER,
)
_ALTER_SENDER_OPTIONS = (
    "id",
    *_DEPLOYMENT,
    "alert-threshold",
    "batch-size",
    "batch-time-interval",
    "gateway-event-filter",
    "group-transaction-events",
)
_RECEIVER_OPTIONS = (
    *RECEIVER_ATTRIBUTES,
    *_DEPLOYMENT,
    "gateway-transport-filter",
    "if-not-exists",
    "skip-if-exists",
)
_DESTROY_OPTIONS = ("id", *_DEPLOYMENT, "if-exists")
_LIFECYCLE_OPTIONS = ("id", *_DEPLOYMENT)
_START_SENDER_OPTIONS = (*_LIFECYCLE_OPTIONS, "clean-queues")
_READ_ONLY_GATEWAY_COMMANDS = (
    "list gateways",
    "status gateway-sender",
    "status gateway-receiver",
    "load-balance gateway-sender",
    "start gateway-receiver",
)
"""gfsh's gateway commands that show or rebalance connections, or start a receiver (the
model's receiver accepts batches from the start; a `manual-start` one warns so): not
configuration, skipped."""


@dataclass(frozen=True, slots=True)
class Command:
    """One gfsh command: where it starts (`file:line`) and its words, `${}` filled."""

    where: str
    name: str  # "create gateway-sender", "connect", ...
    words: tuple[str, ...]  # the words after the name


def script_commands(text: str, path: str, warnings: list[str]) -> list[tuple[int, str]]:
    """The commands of a script as (first line number, text), before `${}` expansion."""
    lines = text.splitlines()
    transcript = any(PROMPT.match(line) for line in lines)
    commands: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None  # a command continued with `\`
    last_line = 0  # the physical line the last finished command ended on
    in_block = False
    for number, raw in enumerate(lines, start=1):
        line, in_block = _without_comments(raw, in_block)
        prompted = PROMPT.match(line)
        if prompted:
            line = line[prompted.end() :]
        if pending is None:
            if not line.strip():
                continue
            if _OPTION_LINE.match(line) and commands and last_line == number - 1:
                start, previous = commands[-1]
                warnings.append(
                    f"{path}:{number}: an option line with no '\\' ending the line before "
                    f"it: gfsh would run it as a command of its own and fail; read as part "
                    f"of the command at line {start}"
                )
                commands[-1] = (start, f"{previous} {line.strip()}")
                last_line = number
                continue
            if transcript and not prompted:
                continue  # a transcript's output line
            pending = (number, "")
        start, buffered = pending
        buffered = f"{buffered} {line}" if buffered else line
        if buffered.endswith("\\"):
            pending = (start, buffered[:-1])
            continue
        pending = None
        commands.append((start, buffered))
        last_line = number
    if pending is not None:
        warnings.append(
            f"{path}:{pending[0]}: the file ends inside a command continued with '\\'; "
            "gfsh never runs it; ignored"
        )
    split: list[tuple[int, str]] = []
    for start, command in commands:
        for part in _COMMAND_SEPARATOR.split(command):
            if part.strip():
                split.append((start, part.replace("\\;", ";").strip()))
    return split


def _without_comments(line: str, in_block: bool) -> tuple[str, bool]:
    """Geode's comment rules: `/* */` blocks, and `#` or `//` at the start of a line."""
    if in_block:
        if "*/" not in line:
            return "", True
        line = line[line.rindex("*/") + 2 :]
        in_block = False
    if "/*" in line:
        head = line[: line.rindex("/*")] if "*/" in line else line[: line.index("/*")]
        tail = line[line.rindex("*/") + 2 :] if "*/" in line else ""
        in_block = "*/" not in line
        line = head + tail
    if line.strip().startswith(("#", "//")):
        line = ""
    return line.replace("\t", " "), in_block


def read_gfsh_script(
    data: bytes, path: str, site: SiteDeclarations, defines: Mapping[str, str]
) -> None:
    """Apply the gateway commands of one gfsh script, in order, to `site`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GeodeImportError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "expected a cache.xml, gfsh script or gemfire.properties"
        ) from None
    reader = _ScriptReader(path, site, dict(defines))
    for line, command_text in script_commands(text, path, site.warnings):
        reader.run(line, command_text)


@dataclass(slots=True)
class _ScriptReader:
    path: str
    site: SiteDeclarations
    variables: dict[str, str]
    connected_to: str | None = None
    handlers: dict[str, Callable[[Command], None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.handlers = {
            "create gateway-sender": self.create_sender,
            "alter gateway-sender": self.alter_sender,
            "destroy gateway-sender": self.destroy_sender,
            "create gateway-receiver": self.create_receiver,
            "destroy gateway-receiver": self.destroy_receiver,
            "create region": self.create_region,
            "alter region": self.alter_region,
            "destroy region": self.destroy_region,
            "start locator": self.start_member,
            "start server": self.start_member,
            "set variable": self.set_variable,
            "start gateway-sender": self.sender_command,
            "stop gateway-sender": self.sender_command,
            "pause gateway-sender": self.sender_command,
            "resume gateway-sender": self.sender_command,
            "stop gateway-receiver": self.stop_receiver,
            "connect": self.connect,
        }

    def run(self, line: int, text: str) -> None:
        where = f"{self.path}:{line}"
        try:
            text = expand_placeholders(text, self.variables, where, "gfsh command")
        except GeodeImportError:
            if self._configures(text):
                raise
            return  # `connect --locator=${LOCATOR}`, `deploy --jar=${JAR}`: no gateway
        words = [match.group() for match in _WORD.finditer(text)]
        two = " ".join(words[:2])
        if len(words) > 1 and two in self.handlers:
            command = Command(where, two, tuple(words[2:]))
        else:
            command = Command(where, words[0], tuple(words[1:]))
        handler = self.handlers.get(command.name)
        if handler is not None:
            handler(command)
        elif two.lower() in self.handlers or words[0].lower() in self.handlers:
            # not skipped as "not configuration": it would leave a gateway out silently
            name = two if two.lower() in self.handlers else words[0]
            raise GeodeImportError(
                f"{where}: unknown gfsh command {name!r} (gfsh's commands are lower case: "
                f"{name.lower()})"
            )
        elif "gateway" in two and two not in _READ_ONLY_GATEWAY_COMMANDS:
            known = [name for name in self.handlers if "gateway" in name]
            hint = did_you_mean(two, known)
            raise GeodeImportError(f"{where}: unknown gfsh command {two!r}{hint}")

    def _configures(self, text: str) -> bool:
        """Whether a command, before its `${}` are filled, may configure a gateway or the
        site: any but `connect` and the commands `run` skips as not configuration (for
        those an undefined placeholder, which gfsh fills with "", changes nothing)."""
        words = text.lower().split()[:2]
        if words[0] == "connect":
            return False
        words = words[:1] + [w for w in words[1:] if not w.startswith("-")]  # its name
        if any("${" in word for word in words):  # the command's name is not known
            return True
        two = " ".join(words)
        if two in self.handlers or words[0] in self.handlers:
            return True
        return "gateway" in two and two not in _READ_ONLY_GATEWAY_COMMANDS

    # --- gateway senders ---------------------------------------------------------------

    def create_sender(self, command: Command) -> None:
        options = _options(command, _SENDER_OPTIONS)
        sender_id = _value(options, "id")
        label = f"create gateway-sender --id={sender_id}" if sender_id else command.name
        for required in ("id", "remote-distributed-system-id"):
            if required not in options:
                raise GeodeImportError(f"{command.where}: {label}: option --{required} is missing")
        threads = options.get("dispatcher-threads", "").strip()
        # gfsh's own check (CreateGatewaySenderCommand's interceptor), serial or parallel
        if threads.isdigit() and int(threads) > 1 and "order-policy" not in options:
            raise GeodeImportError(
                f"{command.where}: {label}: --dispatcher-threads={threads} needs "
                "--order-policy (gfsh: 'Must specify --order-policy when "
                "--dispatcher-threads is larger than 1.')"
            )
        declaration = SenderDeclaration(str(sender_id), command.where, label)
        self._sender_options(declaration, options, command.where)
        self.site.add_sender(declaration)

    def alter_sender(self, command: Command) -> None:
        options = _options(command, _ALTER_SENDER_OPTIONS)
        sender_id = _value(options, "id")
        if sender_id is None:
            raise GeodeImportError(f"{command.where}: {command.name}: option --id is missing")
        declaration = self.site.senders.get(sender_id)
        if declaration is None:
            raise GeodeImportError(
                f"{command.where}: alter gateway-sender --id={sender_id}: no such "
                f"gateway-sender at this site{self._known_senders()}"
            )
        if "gateway-event-filter" in options:
            # gfsh replaces the filter list; the value CLEAR (any case) empties it
            # (AlterGatewaySenderCommand: "Use 'CLEAR' to remove all existing filters.")
            # (the event filters only, from cache.xml or gfsh; transport filters stay)
            declaration.filters = [
                f for f in declaration.filters if f.name.strip("<>-") != "gateway-event-filter"
            ]
            if options["gateway-event-filter"].strip().upper() == "CLEAR":
                options = {k: v for k, v in options.items() if k != "gateway-event-filter"}
        label = f"alter gateway-sender --id={sender_id}"
        self._sender_options(declaration, options, command.where, label)

    def destroy_sender(self, command: Command) -> None:
        options = _options(command, _DESTROY_OPTIONS)
        sender_id = _value(options, "id")
        if sender_id is None:
            raise GeodeImportError(f"{command.where}: {command.name}: option --id is missing")
        label = f"destroy gateway-sender --id={sender_id}"
        users = [r for r in self.site.regions.values() if sender_id in r.senders()]
        if sender_id in self.site.senders and users:
            names = ", ".join(f"{r.name} ({r.sender_ids.where})" for r in users if r.sender_ids)
            raise GeodeImportError(
                f"{command.where}: {label}: the gateway-sender-ids of {names} still name "
                "it; Geode refuses it ('could not be destroyed as it is still used by "
                "region(s)'): take it off those regions first (alter region "
                "--gateway-sender-id)"
            )
        exists = self.site.senders.pop(sender_id, None) is not None
        if not exists and not _flag(command, label, options, "if-exists"):
            raise GeodeImportError(
                f"{command.where}: destroy gateway-sender --id={sender_id}: no such "
                f"gateway-sender at this site{self._known_senders()} (add --if-exists "
                "to allow that)"
            )
        # What was done to the destroyed sender does not apply to a later one of its id.
        self.site.commands = [c for c in self.site.commands if c.sender != sender_id]

    def sender_command(self, command: Command) -> None:
        """`start|stop|pause|resume gateway-sender --id=X`: kept as an operation (R37)."""
        action = command.name.split()[0]
        known = _START_SENDER_OPTIONS if action == "start" else _LIFECYCLE_OPTIONS
        options = _options(command, known)
        sender_id = _value(options, "id")
        if sender_id is None:
            raise GeodeImportError(f"{command.where}: {command.name}: option --id is missing")
        text = f"{command.name} --id={sender_id}"
        if sender_id not in self.site.senders:
            raise GeodeImportError(
                f"{command.where}: {text}: no such gateway-sender at this site"
                f"{self._known_senders()}; gfsh reports it not available"
            )
        clean_queues = _flag(command, text, options, "clean-queues")
        if clean_queues:
            text += " --clean-queues"
        self.site.commands.append(
            SenderCommand(action, sender_id, command.where, text, clean_queues)
        )

    def _known_senders(self) -> str:
        known = ", ".join(sorted(self.site.senders)) or "none"
        return f" (senders so far: {known})"

    def _sender_options(
        self,
        declaration: SenderDeclaration,
        options: Mapping[str, str],
        where: str,
        label: str = "",
    ) -> None:
        """The options of a `create` or (`label`) `alter gateway-sender` command."""
        for name, value in options.items():
            written = Written(f"--{name}", value, where, label)
            if name == FAILURE_LISTENER:
                if not value:
                    raise GeodeImportError(
                        f"{where}: {declaration.label}: option --{name} needs a class name"
                    )
                declaration.failure_listener = written
            elif name in ("gateway-event-filter", "gateway-transport-filter"):
                declaration.filters.extend(
                    Written(f"--{name}", class_name.strip(), where, label)
                    for class_name in value.split(",")
                    if class_name.strip()
                )
            elif name not in _DEPLOYMENT:
                declaration.settings[name] = written

    # --- the gateway receiver ----------------------------------------------------------

    def create_receiver(self, command: Command) -> None:
        options = _options(command, _RECEIVER_OPTIONS)
        settings = {
            name: Written(f"--{name}", value, command.where)
            for name, value in options.items()
            if name in RECEIVER_ATTRIBUTES
        }
        if self.site.receiver is not None and _flag(
            command, command.name, options, "if-not-exists", "skip-if-exists"
        ):
            return
        self.site.set_receiver(ReceiverDeclaration(command.where, command.name, settings))

    def stop_receiver(self, command: Command) -> None:
        """`stop gateway-receiver` (gfsh's StopGatewayReceiverCommand): the model has no
        operation that stops a receiver (R37 acts on senders), so a warning says so."""
        _options(command, _DEPLOYMENT)
        if self.site.receiver is None:
            raise GeodeImportError(
                f"{command.where}: stop gateway-receiver: this site has no gateway-receiver "
                "(gfsh reports it not available)"
            )
        self.site.warnings.append(
            f"{command.where}: stop gateway-receiver: Geode's receiver then refuses "
            "connections until 'start gateway-receiver', and the senders of other sites "
            "retry their batches; the model has no operation that stops a receiver (R37 "
            "acts on senders): it keeps accepting batches; ignored"
        )

    def destroy_receiver(self, command: Command) -> None:
        options = _options(command, (*_DEPLOYMENT, "if-exists"))
        if self.site.receiver is None and not _flag(command, command.name, options, "if-exists"):
            raise GeodeImportError(
                f"{command.where}: destroy gateway-receiver: this site has no "
                "gateway-receiver (add --if-exists to allow that)"
            )
        self.site.receiver = None

    # --- regions -------------------------------------------------------------------------

    def create_region(self, command: Command) -> None:
        options = _options(command, None)
        name = _region_name(command, options)
        label = f"create region --name={name}"
        if name in self.site.regions and _flag(
            command, label, options, "if-not-exists", "skip-if-exists"
        ):
            return  # gfsh: "Region ... already exists", skipped without an error
        parent = name.rsplit("/", 1)[0]
        if parent and parent not in self.site.regions:
            raise GeodeImportError(
                f"{command.where}: {label}: region {parent!r} does not exist at this site "
                f"(gfsh: 'Parent region for \"{name}\" does not exist.'; regions so far: "
                f"{', '.join(sorted(self.site.regions)) or 'none'})"
            )
        declaration = RegionDeclaration(name, command.where)
        template = options.get("template-region")
        if template is not None and _slash(template) not in self.site.regions:
            raise GeodeImportError(
                f"{command.where}: create region --name={name}: --template-region: region "
                f"{_slash(template)!r} does not exist at this site (gfsh: 'Template region "
                f"{_slash(template)} does not exist.'; regions so far: "
                f"{', '.join(sorted(self.site.regions)) or 'none'})"
            )
        if template is not None:
            copied = self.site.regions[_slash(template)]
            declaration.sender_ids = copied.sender_ids
            declaration.concurrency_checks = copied.concurrency_checks
            declaration.partitioned = copied.partitioned
            declaration.type = copied.type
            declaration.total_num_buckets = copied.total_num_buckets
        if "type" in options:
            # gfsh's EnumConverter: '-' read as '_', then the name as given or upper-cased.
            shortcut = options["type"].replace("-", "_")
            if shortcut not in REGION_SHORTCUTS:
                shortcut = shortcut.upper()
            if shortcut not in REGION_SHORTCUTS:
                hint = did_you_mean(shortcut, REGION_SHORTCUTS)
                raise GeodeImportError(
                    f"{command.where}: create region --name={name}: --type: "
                    f"{options['type']!r} is not a Geode region shortcut{hint}"
                )
            declaration.type = Written("--type", options["type"], command.where)
            declaration.partitioned = is_partition_shortcut(shortcut)
        if "total-num-buckets" in options:
            declaration.total_num_buckets = Written(
                "--total-num-buckets", options["total-num-buckets"], command.where
            )
            if not declaration.partitioned:
                raise GeodeImportError(
                    f"{command.where}: create region --name={name}: --total-num-buckets "
                    "can be used only for creating a Partitioned Region (gfsh), and the "
                    f"region is not one"
                )
        self._region_options(declaration, options, command.where)
        if "gateway-sender-id" in options:  # gfsh's CreateRegionCommand checks them
            unknown = [i for i in declaration.senders() if i not in self.site.senders]
            if unknown:
                refusal = (
                    f"Specify valid gateway-sender-id. Unknown Gateway Sender(s): "
                    f'"{", ".join(unknown)}".'
                    if self.site.senders
                    else "There are no GatewaySenders defined currently in the system."
                )
                raise GeodeImportError(
                    f"{command.where}: create region --name={name}: --gateway-sender-id "
                    f"names no sender of this site so far{self._known_senders()}; gfsh "
                    f"refuses the command: '{refusal}'"
                )
        self.site.add_region(declaration, f"create region --name={name}")

    def alter_region(self, command: Command) -> None:
        # gfsh: a bare --gateway-sender-id is "" (specifiedDefaultValue): no senders
        options = _options(command, None, bare_empty=("gateway-sender-id",))
        name = _region_name(command, options)
        declaration = self.site.regions.get(name)
        if declaration is None:
            raise GeodeImportError(
                f"{command.where}: alter region --name={name}: no such region at this site "
                f"(regions so far: {', '.join(sorted(self.site.regions)) or 'none'})"
            )
        self._region_options(declaration, options, command.where)

    def destroy_region(self, command: Command) -> None:
        """gfsh destroys the region and its subregions; one that does not exist is an
        error unless `--if-exists`, as for a gateway-sender."""
        options = _options(command, None)
        name = _region_name(command, options)
        if name not in self.site.regions:
            if _flag(command, f"destroy region --name={name}", options, "if-exists"):
                return
            raise GeodeImportError(
                f"{command.where}: destroy region --name={name}: no such region at this site "
                f"(regions so far: {', '.join(sorted(self.site.regions)) or 'none'}; gfsh: "
                f"'Could not find a Region with Region path \"{name}\"'; add --if-exists "
                "to allow that)"
            )
        for region in [r for r in self.site.regions if r == name or r.startswith(name + "/")]:
            del self.site.regions[region]

    @staticmethod
    def _region_options(
        declaration: RegionDeclaration, options: Mapping[str, str], where: str
    ) -> None:
        if "gateway-sender-id" in options:
            declaration.sender_ids = Written(
                "--gateway-sender-id", options["gateway-sender-id"], where
            )
        if "enable-concurrency-checks" in options:
            declaration.concurrency_checks = Written(
                "--enable-concurrency-checks", options["enable-concurrency-checks"], where
            )

    # --- members, variables, connections -------------------------------------------------

    def start_member(self, command: Command) -> None:
        options = _options(command, None, repeatable=("J",))
        for argument in options.get("J", "").split("\0"):
            if argument.startswith(DSID_PROPERTY):
                self.site.set_dsid(
                    Written(
                        f"--J={DSID_PROPERTY.rstrip('=')}",
                        argument[len(DSID_PROPERTY) :],
                        command.where,
                    )
                )

    def set_variable(self, command: Command) -> None:
        options = _options(command, ("name", "value"))
        name, value = options.get("name"), options.get("value")
        if name is None or value is None:
            raise GeodeImportError(f"{command.where}: set variable: needs --name and --value")
        self.variables[name] = value

    def connect(self, command: Command) -> None:
        options = _options(command, None)
        target = options.get("locator") or options.get("url") or options.get("jmx-manager") or ""
        if self.connected_to is not None and target != self.connected_to:
            raise GeodeImportError(
                f"{command.where}: connect --locator={target}: the file already connected to "
                f"{self.connected_to}; a file given to --site configures one site: split "
                "it into one file per site"
            )
        self.connected_to = target


def _slash(name: str) -> str:
    return "/" + name.strip().lstrip("/")


def _flag(command: Command, label: str, options: Mapping[str, str], *names: str) -> bool:
    """Whether one of the flags `names` is set (bare, or true as gfsh reads booleans)."""
    for name in names:
        try:
            if geode_boolean(options.get(name, "false"), gfsh=True):
                return True
        except ValueError as exc:
            raise GeodeImportError(f"{command.where}: {label}: --{name}: {exc}") from None
    return False


def _region_name(command: Command, options: Mapping[str, str]) -> str:
    name = options.get("name")
    if not name:
        raise GeodeImportError(f"{command.where}: {command.name}: option --name is missing")
    return _slash(name)


def _value(options: Mapping[str, str], name: str) -> str | None:
    return options.get(name)


def _unquoted(value: str, where: str, name: str) -> str:
    if value[:1] in ("'", '"'):
        if len(value) < 2 or value[-1] != value[0]:
            raise GeodeImportError(f"{where}: {name}: the value {value} has no closing quote")
        return value[1:-1]
    return value


def _options(
    command: Command,
    known: Sequence[str] | None,
    repeatable: Sequence[str] = (),
    bare_empty: Sequence[str] = (),
) -> dict[str, str]:
    """`--name=value`, `--name value` or a bare `--flag` (= "true"), checked against `known`.

    `known=None` accepts any option (commands of which only a few options matter, such
    as `create region`); a repeatable option's values are joined with NUL; a bare option
    of `bare_empty` is "" (gfsh's specifiedDefaultValue).
    """
    options: dict[str, str] = {}
    words = command.words
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("--") or word == "--":
            hint = (
                "a '\\' continues a command only as the last character of its line (gfsh's "
                "executeScript): is a blank after it?"
                if word == "\\"
                else "options are --name=value or --name value"
            )
            raise GeodeImportError(
                f"{command.where}: {command.name}: unexpected argument {word!r} ({hint})"
            )
        name, equals, value = word[2:].partition("=")
        if not equals:
            following = words[index + 1] if index + 1 < len(words) else None
            if following is not None and not following.startswith("--"):
                value = following
                index += 1
            elif name in bare_empty:
                value = ""
            elif name in _FLAGS or known is None:
                value = "true"
            else:
                raise GeodeImportError(
                    f"{command.where}: {command.name}: option --{name} needs a value"
                )
        if known is not None and name not in known:
            hint = did_you_mean(name, sorted(known), "--")
            raise GeodeImportError(
                f"{command.where}: {command.name}: unknown option --{name}{hint}"
            )
        value = _unquoted(value, command.where, f"{command.name}: option --{name}")
        if name in options:
            if name not in repeatable:
                raise GeodeImportError(
                    f"{command.where}: {command.name}: option --{name} is given twice"
                )
            value = f"{options[name]}\0{value}"
        options[name] = value
        index += 1
    return options
