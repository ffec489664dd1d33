"""The one declaration of the workbook's shape: sheets, columns, types, help.

Everything that writes, reads or validates the workbook derives from this
module: the template generator, the store, the pandera schemas, the report.
Stdlib only, so that it can be imported anywhere without cost.

Two kinds of sheet:
- a *form* (Protocol, Decision): one row per field, columns field | value | help;
- a *table* (Variants, Attempts, ...): a header row of column names, one record
  per row below it.

A measurement that can be missing has a sibling ``<name>_reason`` column: the
value is empty and the reason says why (R12: no GPU is not 0 s or 0 B).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Bumped whenever a sheet or column changes; stored in the Guide sheet so an
#: older workbook can be recognised. A sheet, column or field added in version N
#: says ``since=N``: a workbook of an older layout lacks it, reads with it empty,
#: and is saved in the current layout. Renaming or removing one is not allowed
#: (it would need a migration); add instead.
LAYOUT_VERSION = 11
#: The oldest layout this version reads.
OLDEST_READABLE = 1

# Column kinds. Each has an Excel number format and a type check.
TEXT = "text"
INT = "int"
NUMBER = "number"
SECONDS = "seconds"
BYTES = "bytes"
USD = "usd"
RATIO = "ratio"
YESNO = "yesno"
CHOICE = "choice"
DATETIME = "datetime"  # ISO 8601 text with its UTC offset: time zones stay explicit
USD_OR_UNDEFINED = "usd_or_undefined"  # an amount, or the text "undefined" (R21)
MONEY = "money"  # an amount >= 0 in the currency its row names

YES, NO = "yes", "no"
#: The word that marks a figure typed for a demo or an example (a Tariffs or Rentals source,
#: a Verification's verified_by): every amount, cost and chart resting on one says so.
EXAMPLE = "EXAMPLE"
STATUSES = ("completed", "failed", "interrupted")
#: The OpenAI HTTP routes a serving campaign (Protocol ``api``) and ``serve-bench --api`` send
#: requests to: completions is ``/v1/completions``, chat ``/v1/chat/completions``.
SERVING_APIS = ("completions", "chat")
#: How a serving campaign's requests arrive (Protocol ``arrival``; blank is the first).
SERVING_ARRIVALS = ("poisson", "concurrency")
#: How a serving campaign's outputs are compared with the reference's (Protocol
#: ``agreement_measure``; blank is the first).
SERVING_AGREEMENTS = ("token", "exact")
VERDICTS = ("pass", "fail", "not evaluated")


@dataclass(frozen=True)
class Column:
    """One column of a table sheet, or one field of a form sheet."""

    name: str
    kind: str = TEXT
    help: str = ""
    required: bool = False
    choices: tuple[str, ...] = ()
    #: The choices are suggestions: the dropdown offers them and accepts another value, which
    #: a rule of ``iteralab validate`` checks instead of the list (Variants padding: bucket-N).
    open_choices: bool = False
    #: A measurement that may be missing: pairs with a ``<name>_reason`` column.
    measurement: bool = False
    #: Written by the toolkit (runner, report), not typed by a person.
    computed: bool = False
    width: int = 14
    #: The layout version that added it: older workbooks lack it and read it empty.
    since: int = 1
    #: A money column shown in its row's currency: the column naming it (e.g. "currency").
    currency: str = ""
    #: The currency a blank currency cell means (Tariffs: USD); "" claims none.
    blank_currency: str = ""

    @property
    def reason(self) -> str:
        """Name of the sibling column explaining an empty measurement."""
        return f"{self.name}_reason"


@dataclass(frozen=True)
class Sheet:
    """One sheet: its name, kind (form or table), columns and purpose."""

    name: str
    kind: str  # "form", "table" or "text"
    columns: tuple[Column, ...] = ()
    purpose: str = ""
    #: Typed by a person (kept across re-renders) rather than derived.
    input: bool = True
    #: Columns of a table whose values must be unique.
    unique: tuple[str, ...] = ()
    #: The layout version that added it: older workbooks lack it and read it empty.
    since: int = 1
    all_columns: tuple[Column, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        expanded: list[Column] = []
        for col in self.columns:
            expanded.append(col)
            if col.measurement:
                expanded.append(
                    Column(
                        col.reason,
                        TEXT,
                        f"Why {col.name} is empty.",
                        computed=col.computed,
                        width=24,
                        since=col.since,
                    )
                )
        object.__setattr__(self, "all_columns", tuple(expanded))

    @property
    def names(self) -> list[str]:
        """Column (or field) names, reason columns included, in sheet order."""
        return [c.name for c in self.all_columns]

    def column(self, name: str) -> Column:
        """The column called ``name``; KeyError if the sheet has none."""
        for col in self.all_columns:
            if col.name == name:
                return col
        raise KeyError(f"sheet {self.name} has no column {name!r}")


def added_after(version: int, sheet: Sheet, name: str) -> bool:
    """True when ``sheet``'s column (or field) ``name`` is newer than layout ``version``.

    Such a column may be absent from a workbook of that layout, and a blank in it
    is left out of hashes sealed then (protocol lock, attempt chain), so that a
    seal made before the column existed still verifies.
    """
    return sheet.since > version or sheet.column(name).since > version


def _c(name: str, kind: str = TEXT, help: str = "", **kw: object) -> Column:
    return Column(name, kind, help, **kw)  # type: ignore[arg-type]


def column_letter(sheet: Sheet, name: str) -> str:
    """The Excel column letter(s) of ``sheet``'s column ``name`` (A, B, ..., AA)."""
    return letter(sheet.names.index(name) + 1)


def letter(index: int) -> str:
    """The Excel column letter(s) of column number ``index`` (1 is A, 27 is AA)."""
    text = ""
    while index:
        index, rest = divmod(index - 1, 26)
        text = chr(65 + rest) + text
    return text


FORM_HEADER = ("field", "value", "help")

GUIDE = Sheet(
    "Guide",
    "text",
    purpose="How to fill the workbook, in order.",
    input=False,
)

PROTOCOL = Sheet(
    "Protocol",
    "form",
    (
        _c(
            "scenario",
            help="What is compared, e.g. offline classification of a fixed corpus "
            "(R1, R24). Interactive serving or training need another protocol.",
            required=True,
            width=60,
        ),
        _c(
            "corpus_path",
            help="The final comparison corpus (JSONL or CSV with id, text, label), "
            "relative to this workbook's folder.",
            required=True,
        ),
        _c(
            "tuning_data",
            help="Path (relative to this workbook's folder, JSONL or CSV with "
            "id and text) of the data used to tune or fit the configuration, or 'none' if "
            "nothing was tuned; a note may follow ': ', e.g. 'calibration.jsonl: chapters kept "
            "apart'. `iteralab validate` names every id and text it shares with the comparison "
            "corpus; `iteralab lock` refuses such an overlap unless acknowledged (R2).",
            required=True,
        ),
        _c(
            "validated_corpus_definition",
            help="Every check an output set must pass to count as "
            "a validated corpus: exact ids, format, coverage, task metric (R1).",
            required=True,
        ),
        _c(
            "metric",
            CHOICE,
            "The task metric computed from the predictions file.",
            required=True,
            choices=("accuracy", "macro_f1", "chrf"),
        ),
        _c(
            "threshold",
            RATIO,
            "Minimum metric value for a corpus to be accepted (fixed before "
            "any timing; never lowered afterwards, R16).",
            required=True,
        ),
        _c(
            "tolerance",
            RATIO,
            "Largest allowed drop of the metric against the reference "
            "variant (absolute, e.g. 0.01 = one point).",
            required=True,
        ),
        _c(
            "reference_variant",
            help="Variant id whose predictions are the reference for tolerance and agreement.",
            required=True,
        ),
        _c(
            "subgroups",
            help="Predeclared subgroups checked for every variant: corpus fields, "
            "comma-separated, e.g. 'stratum,label' or 'stratum,label,genre' (R1, R16). stratum "
            "is the length stratum by stratum_bounds; label and any other name is a field every "
            "corpus record must hold. 'none' for no subgroup.",
            required=True,
        ),
        _c(
            "warmup_rule",
            help="Which inputs, how many runs, how recompilation is handled; the "
            "same for all variants (R8).",
            required=True,
        ),
        _c("repetitions", INT, "Full runs per variant (R11).", required=True),
        _c(
            "order_rotation",
            CHOICE,
            "How the variant order changes between repetitions (R11).",
            required=True,
            choices=("rotate", "fixed"),
        ),
        _c(
            "process_policy",
            CHOICE,
            "fresh: one process per attempt (honest memory peaks); "
            "shared: one process for the campaign.",
            required=True,
            choices=("fresh", "shared"),
        ),
        _c("timing_boundary", help="What the measured window covers (R9).", required=True),
        _c(
            "exclusion_rule",
            help="When an attempt may be excluded (documented external cause "
            "only), applied to every variant alike (R14).",
            required=True,
        ),
        _c("seeds", help="Seeds used, comma-separated (R17).", required=True),
        _c(
            "determinism",
            help="Determinism options, in words (R17); the runner applies the "
            "deterministic_algorithms and cudnn_benchmark fields.",
            required=True,
        ),
        _c(
            "reproduction_target",
            CHOICE,
            "What is to be reproduced (R17).",
            required=True,
            choices=("identical outputs", "bounded numeric deviation", "business quality"),
        ),
        _c(
            "expected_outputs",
            INT,
            "Distinct production corpora expected from the rental "
            "(R22); each accepted one counts once.",
            required=True,
        ),
        _c(
            "deadline",
            DATETIME,
            "When results are due, ISO 8601 with offset, e.g. 2026-12-11T09:00+01:00.",
            required=True,
        ),
        _c(
            "stratum_bounds",
            help="Last token count of each length stratum but the open-ended "
            "last one, ascending and comma-separated, in the variant's tokenizer (special tokens "
            "included): '32, 128' gives short <= 32, medium 33-128, long >= 129 (R5). Blank "
            "means '32, 128'.",
            since=3,
        ),
        _c(
            "deterministic_algorithms",
            YESNO,
            "yes: each attempt calls "
            "torch.use_deterministic_algorithms(True) and sets cudnn.deterministic (on CUDA also "
            "CUBLAS_WORKSPACE_CONFIG=:4096:8; an operation without a deterministic kernel then "
            "fails its attempt); no: both off. The Manifest records the state read back and "
            "`iteralab validate` compares it (R17). Blank: left as torch has it.",
            choices=(YES, NO),
            since=3,
        ),
        _c(
            "cudnn_benchmark",
            YESNO,
            "yes: cuDNN times candidate algorithms and keeps the "
            "fastest (results may vary between runs); no: it does not. Applied, recorded and "
            "compared as deterministic_algorithms (R17). Blank: left as torch has it.",
            choices=(YES, NO),
            since=3,
        ),
        _c(
            "task",
            CHOICE,
            "classification: each text gets a label (the metric is accuracy or "
            "macro_f1); generation: a causal LM continues each prompt under the decoding rule "
            "below (metric chrf against the corpus's reference field; agreement with the "
            "reference variant's outputs against tolerance, R16); serving (since layout 10): "
            "each variant's endpoint answers the prompts of corpus_path streamed at its "
            "request_rate, judged by the latency targets below. Blank is classification.",
            choices=("classification", "generation", "serving"),
            since=3,
        ),
        _c(
            "max_new_tokens",
            INT,
            "Generation: most new tokens per output, the same for every "
            "variant; decoding is greedy (R1, R8).",
            since=3,
        ),
        _c(
            "stop_rule",
            CHOICE,
            "Generation: eos ends an output at the end-of-sequence token "
            "(or max_new_tokens); max_new_tokens always generates that many. Blank is eos.",
            choices=("eos", "max_new_tokens"),
            since=3,
        ),
        _c(
            "long_prompts",
            CHOICE,
            "Generation: a prompt longer than the variant's max_length "
            "is truncate (its last max_length tokens kept, counted in truncated, R3) or refuse "
            "(the attempt fails naming it). Blank is refuse.",
            choices=("truncate", "refuse"),
            since=3,
        ),
        _c(
            "arrival",
            CHOICE,
            "Serving: how requests arrive. poisson: at random times averaging each variant's "
            "request_rate per second, sent on their own schedule whatever the server does "
            "(open loop); concurrency: request_rate requests always in flight, the next sent "
            "when one ends. Blank is poisson.",
            choices=SERVING_ARRIVALS,
            since=10,
        ),
        _c(
            "request_count",
            INT,
            "Serving: measured requests per attempt (the prompts are taken in turn, again "
            "from the first when they run out). Give this or request_duration_s.",
            since=10,
        ),
        _c(
            "request_duration_s",
            NUMBER,
            "Serving: seconds each attempt sends measured requests for, instead of a "
            "request_count.",
            since=10,
        ),
        _c(
            "warmup_requests",
            INT,
            "Serving: requests sent one at a time before the measured ones, recorded but "
            "never measured. Blank is 0.",
            since=10,
        ),
        _c(
            "latency_targets",
            help="Serving: every target a request and the attempt must meet, separated by "
            "';', each METRIC_pNN_ms<=LIMIT with METRIC ttft (time to first token), tpot "
            "(time per output token), itl (inter-token latency) or e2e (end to end), e.g. "
            "'ttft_p99_ms<=500; tpot_p99_ms<=50'. Goodput counts the requests meeting "
            "every one; the Summary names the highest rate whose attempts meet them all.",
            since=10,
            width=30,
        ),
        _c(
            "agreement_measure",
            CHOICE,
            "Serving: how the greedy outputs are compared with the reference variant's, "
            "prompt by prompt: token (the share of matching words, at least 1 - tolerance) "
            "or exact (the share of identical outputs, at least 1 - tolerance). Blank is "
            "token.",
            choices=SERVING_AGREEMENTS,
            since=10,
        ),
        _c(
            "api",
            CHOICE,
            "Serving: the route every request goes to: completions (/v1/completions, the "
            "prompt sent as it is) or chat (/v1/chat/completions, the prompt as one user "
            "message, formatted by the served model's chat template). Blank, and every "
            "workbook older than layout 11, is completions.",
            choices=SERVING_APIS,
            since=11,
        ),
    ),
    purpose="Decisions fixed before the campaign (R1-R3, R8, R11, R14, R16-R17). Lock it with "
    "`iteralab lock` before measuring.",
)

VARIANTS = Sheet(
    "Variants",
    "table",
    (
        _c("variant_id", help="Short stable id, e.g. b8-fp32.", required=True),
        _c(
            "series",
            INT,
            "Series number: in series 1 batch is the only variable (R6).",
            required=True,
            width=8,
        ),
        _c("description", help="What differs from the other variants of the series.", width=30),
        _c(
            "model_path",
            help="Local Hugging Face folder (relative to the workbook) or hub id.",
            required=True,
            width=30,
        ),
        _c(
            "head_path",
            help="Optional linear-head folder (encoder + head); empty for an "
            "AutoModelForSequenceClassification folder.",
            width=20,
        ),
        _c("precision", CHOICE, required=True, choices=("fp32", "bf16", "fp16")),
        _c("quantization", CHOICE, required=True, choices=("none", "dynamic-int8")),
        _c("batch_size", INT, required=True, width=10),
        _c("device", CHOICE, required=True, choices=("cpu", "cuda")),
        _c("gpu_slug", help="Catalog slug of the rented GPU (joins Tariffs); empty on CPU."),
        _c(
            "padding",
            CHOICE,
            "dynamic: pad to the longest in the batch; max_length: pad every batch to "
            "max_length; bucket-N (N a whole number of tokens, e.g. bucket-32, since layout 8): "
            "pad each batch to the next multiple of N, capped at max_length, every such width "
            "warmed on synthetic token ids before the window.",
            required=True,
            choices=("dynamic", "max_length", "bucket-16", "bucket-32", "bucket-64"),
            open_choices=True,
        ),
        _c(
            "max_length",
            INT,
            "Tokens kept per input; longer inputs are truncated and counted.",
            required=True,
            width=10,
        ),
        _c(
            "length_grouping",
            CHOICE,
            "sorted changes the work's shape: a declared variant (R6).",
            required=True,
            choices=("none", "sorted"),
        ),
        _c("compile", YESNO, "torch.compile the model.", required=True, choices=(YES, NO), width=9),
        _c("attention_backend", CHOICE, required=True, choices=("sdpa", "eager")),
        _c(
            "resume_of",
            help="Variant this one resumes after a failure (R13); its time and attempts count too.",
        ),
        _c("notes", width=30),
        _c(
            "rental_id",
            help="The Rentals row this variant ran on; several variants share one "
            "rental, and it is counted once in the Settlement (R21).",
            since=2,
        ),
        _c(
            "base_variant",
            help="Series 2 and later: the variant this one changes (R6). "
            "Series 1 leaves it blank: batch is its only variable.",
            since=2,
        ),
        _c(
            "changes",
            help="Series 2 and later: the columns changed from base_variant, "
            "comma-separated, e.g. 'precision'; every other column stays as the base's (R6).",
            since=2,
            width=20,
        ),
        _c(
            "label",
            help="Where it runs on a cluster (`iteralab run --cluster`): the label a "
            "node advertises with `iteralab worker start --label`. Blank: the gpu_slug for a "
            "cuda variant; a cpu variant needs one.",
            since=3,
            width=12,
        ),
        _c(
            "padding_side",
            CHOICE,
            "Generation: where a batch's shorter prompts are padded. "
            "left keeps every prompt's end next to its new tokens; right is a declared variant "
            "whose outputs may differ. Blank is left.",
            choices=("left", "right"),
            since=3,
            width=8,
        ),
        _c(
            "kv_cache_dtype",
            help="Generation: the KV cache's dtype; auto (blank) keeps the "
            "variant's precision, the only one the runner applies today.",
            since=3,
            width=10,
        ),
        _c(
            "engine",
            help="What runs the model: torch (blank; every workbook before layout 5 "
            "reads as torch), onnxruntime (classification), ctranslate2 (generation), or "
            "python:MODULE:CALLABLE, a predictor of your own (docs/engines.md). A work column "
            "like precision: a later series names it in changes.",
            since=5,
            width=14,
        ),
        _c(
            "input_pipeline",
            CHOICE,
            "Classification, torch engine: sequential (blank) tokenizes, copies and runs one "
            "batch after the other and brings each batch's predictions to the host; "
            "overlapped tokenizes the next batch on a host thread while the current one runs, "
            "copies from pinned memory without blocking (CUDA) and brings the predictions to "
            "the host once, at the window's end. A work column like padding: a later series "
            "names it in changes.",
            choices=("sequential", "overlapped"),
            since=8,
            width=12,
        ),
        _c(
            "request_rate",
            NUMBER,
            "Serving: the load this variant puts on its endpoint, requests per second "
            "(Protocol arrival poisson) or requests in flight (concurrency, a whole number). "
            "A rate sweep is one variant per rate on the same endpoint; a later series names "
            "request_rate in changes.",
            since=10,
            width=10,
        ),
    ),
    purpose="One row per declared variant (R6).",
    unique=("variant_id",),
)

ATTEMPTS = Sheet(
    "Attempts",
    "table",
    (
        _c("attempt_id", help="Unique id of the attempt.", required=True, computed=True, width=22),
        _c("variant_id", required=True, computed=True),
        _c("repetition", INT, "1..repetitions.", required=True, computed=True, width=8),
        _c(
            "order_position",
            INT,
            "Position of the variant within its repetition (R11).",
            required=True,
            computed=True,
            width=8,
        ),
        _c("started_at", DATETIME, required=True, computed=True, width=22),
        _c("status", CHOICE, required=True, choices=STATUSES, computed=True, width=11),
        _c(
            "protocol_sha256",
            help="Lock hash of the protocol this attempt ran under.",
            required=True,
            computed=True,
            width=16,
        ),
        _c(
            "manifest_id",
            help="Row of the Manifest sheet describing the environment.",
            required=True,
            computed=True,
        ),
        _c(
            "load_s",
            SECONDS,
            "Model load (and compile), outside the run time (R8). CUDA "
            "context creation comes before its timer starts.",
            measurement=True,
            computed=True,
            width=10,
        ),
        _c(
            "warmup_s",
            SECONDS,
            "Warm-up by the protocol's rule (R8).",
            measurement=True,
            computed=True,
            width=10,
        ),
        _c(
            "measured_s",
            SECONDS,
            "Main time, on the host clock: the measured window (read "
            "corpus, tokenize, transfer, infer, predictions on the host, R9), the device "
            "synchronised at both ends (R10).",
            measurement=True,
            computed=True,
            width=11,
        ),
        _c(
            "device_s",
            SECONDS,
            "The same measured window on the device clock: CUDA events "
            "at its two synchronised ends (R10). Host work between batches is inside it; the "
            "model's own device time is forward_device_s.",
            measurement=True,
            computed=True,
            width=10,
        ),
        _c("evaluation_s", SECONDS, measurement=True, computed=True, width=10),
        _c("export_s", SECONDS, measurement=True, computed=True, width=10),
        _c("items_completed", INT, required=True, computed=True, width=9),
        _c("expected_ids", INT, "Ids in the corpus.", required=True, computed=True, width=9),
        _c(
            "observed_ids",
            INT,
            "Distinct ids in the predictions file.",
            measurement=True,
            computed=True,
            width=9,
        ),
        _c(
            "ids_match",
            YESNO,
            "Set equality checked from the predictions file.",
            choices=(YES, NO),
            measurement=True,
            computed=True,
            width=8,
        ),
        _c("metric_value", RATIO, measurement=True, computed=True, width=10),
        _c(
            "quality_verdict",
            CHOICE,
            "Metric vs threshold, tolerance vs reference, subgroups.",
            required=True,
            choices=VERDICTS,
            computed=True,
            width=12,
        ),
        _c(
            "reference_agreement",
            RATIO,
            "Share of predictions equal to the reference variant's.",
            measurement=True,
            computed=True,
            width=10,
        ),
        _c("subgroup_metrics", help="Metric per predeclared subgroup.", computed=True, width=30),
        _c(
            "corpus_accepted",
            YESNO,
            "The run's verdict (R12): completed, ids match, quality passes.",
            required=True,
            choices=(YES, NO),
            computed=True,
            width=9,
        ),
        _c(
            "mem_allocated_peak_bytes",
            BYTES,
            "torch.cuda.max_memory_allocated (tensors).",
            measurement=True,
            computed=True,
        ),
        _c(
            "mem_reserved_peak_bytes",
            BYTES,
            "torch.cuda.max_memory_reserved (allocator); does not add to allocated.",
            measurement=True,
            computed=True,
        ),
        _c(
            "host_rss_peak_bytes",
            BYTES,
            "Peak resident memory of the process.",
            measurement=True,
            computed=True,
        ),
        _c(
            "padded_tokens",
            INT,
            "Tokens fed to the model, padding included.",
            measurement=True,
            computed=True,
        ),
        _c(
            "padding_efficiency",
            RATIO,
            "Real tokens / padded tokens.",
            measurement=True,
            computed=True,
        ),
        _c(
            "truncated",
            INT,
            "Inputs longer than max_length (R3).",
            measurement=True,
            computed=True,
            width=9,
        ),
        _c(
            "predictions_path",
            help="Predictions file, relative to the workbook.",
            computed=True,
            width=30,
        ),
        _c("predictions_sha256", computed=True, width=16),
        _c(
            "excluded",
            YESNO,
            "Excluded for a documented external cause (R14); written by "
            "`iteralab exclude`, which logs it in Audit.",
            required=True,
            choices=(YES, NO),
            computed=True,
            width=9,
        ),
        _c(
            "exclusion_reason",
            help="Written by `iteralab exclude --reason`.",
            computed=True,
            width=24,
        ),
        _c(
            "pre_amendment",
            YESNO,
            "Measured under a protocol amended since.",
            required=True,
            choices=(YES, NO),
            computed=True,
            width=9,
        ),
        _c("row_sha256", help="Hash chained to the previous attempt row.", computed=True, width=16),
        _c("notes", help="Errors, duplicates/missing ids, output paths.", width=40),
        _c(
            "attention_kernels",
            help="Attention kernel the profiler saw on the load phase's "
            "shortest and longest batch (rows x tokens: kernel); it can differ by batch, "
            "padding, precision and compilation. On the CPU without compilation, the "
            "shortest batch alone (torch's CPU choice does not depend on the length).",
            computed=True,
            since=2,
            width=30,
        ),
        _c(
            "recompilations",
            INT,
            "Graphs torch.compile built inside the measured window "
            "(0 expected): more put compile time into measured_s (R8). Empty when not "
            "compiled or the window was not reached.",
            computed=True,
            since=2,
            width=9,
        ),
        _c(
            "seed",
            INT,
            "The seed this attempt ran with (torch.manual_seed), one of the "
            "Protocol's seeds: each repetition runs once per declared seed, and results stay "
            "apart per seed (R17). Empty when the Protocol declares none.",
            computed=True,
            since=3,
            width=8,
        ),
        _c(
            "forward_device_s",
            SECONDS,
            "Device time of the model's forward calls in the "
            "measured window: CUDA events around each call, summed (R10). Tokenizing, "
            "transfers and host work between batches are outside it, so it is at most "
            "device_s.",
            measurement=True,
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "real_flops",
            NUMBER,
            "Model FLOPs the inputs need: per input F(L) = T*L + S*L^2 + "
            "Q from the model's config, L its tokens after truncation (matrix products, 2 "
            "FLOPs a multiply-add; README 'Utilisation').",
            measurement=True,
            computed=True,
            since=3,
            width=24,
        ),
        _c(
            "padded_flops",
            NUMBER,
            "Model FLOPs computed: per batch rows * F(padded length); padding positions included.",
            measurement=True,
            computed=True,
            since=3,
            width=24,
        ),
        _c(
            "real_flop_rate",
            NUMBER,
            "real_flops / measured_s (FLOP/s).",
            measurement=True,
            computed=True,
            since=3,
            width=24,
        ),
        _c(
            "padded_flop_rate",
            NUMBER,
            "padded_flops / measured_s (FLOP/s).",
            measurement=True,
            computed=True,
            since=3,
            width=24,
        ),
        _c(
            "utilisation",
            NUMBER,
            "real_flop_rate / the matrix-multiply peak in the variant's precision: the "
            "maximum of the campaign's probes so far, this attempt's included (Manifest "
            "matmul_peak_flops). Empty with its reason when other processes took more than "
            "0.25 of the machine during the probe or the window (probe_others_share, "
            "others_cpu_share). Never above 1.05: a higher ratio means that peak is not the "
            "machine's, so the cell is left empty with its reason.",
            measurement=True,
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "padding_waste",
            RATIO,
            "1 - real_flops / padded_flops: the share of the model's work spent on padding.",
            measurement=True,
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "prompt_tokens",
            INT,
            "Generation: prompt tokens fed to the model, after truncation, padding excluded.",
            measurement=True,
            computed=True,
            since=3,
        ),
        _c(
            "generated_tokens",
            INT,
            "Generation: new tokens of every output (up to and "
            "including its end-of-sequence token).",
            measurement=True,
            computed=True,
            since=3,
        ),
        _c(
            "ttft_s",
            SECONDS,
            "Generation: time to first token, median over batches: from "
            "calling generate to the first new token (the prefill), device synchronised.",
            measurement=True,
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "decode_tokens_per_s",
            NUMBER,
            "Generation: tokens after each output's first, "
            "over the time from the first token to the last, summed over batches (the prefill "
            "left out).",
            measurement=True,
            computed=True,
            since=3,
        ),
        _c(
            "kv_cache_peak_bytes",
            BYTES,
            "Generation: bytes of the KV cache's tensors at the "
            "end of the batch that held the most (the cache grows while a batch decodes).",
            measurement=True,
            computed=True,
            since=3,
        ),
        _c(
            "exact_agreement",
            RATIO,
            "Generation: share of prompts whose output is identical, "
            "token for token, to the reference variant's.",
            measurement=True,
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "token_agreement",
            RATIO,
            "Generation: positions holding the same token as the "
            "reference variant's output, over the longer output's positions (R16).",
            measurement=True,
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "bandwidth_ceiling_tokens_per_s",
            NUMBER,
            "Generation: decode tokens/s memory "
            "bandwidth allows at the run's batch, the planner's rule: batch x bandwidth / "
            "(weights + batch x KV cache per sequence at the longest prompt + max_new_tokens). "
            "Bandwidth: the catalog's (gpu_slug) on a GPU, the peak probe's copy rate on a "
            "CPU.",
            measurement=True,
            computed=True,
            since=3,
        ),
        _c(
            "decode_ceiling_fraction",
            RATIO,
            "Generation: decode_tokens_per_s / bandwidth_ceiling_tokens_per_s.",
            measurement=True,
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "others_cpu_s",
            NUMBER,
            "CPU seconds other processes of the machine used during the "
            "measured window (/proc/stat less the attempt's own process): other jobs on the "
            "host stretch measured_s; 0 is a quiet machine. Empty when the window did not "
            "finish or the OS does not count it.",
            measurement=True,
            computed=True,
            since=7,
            width=10,
        ),
        _c(
            "others_cpu_share",
            RATIO,
            "others_cpu_s / (the window's wall seconds x the machine's "
            "logical CPUs): the part of the whole machine other processes took. Above 0.25 the "
            "Summary notes name the window as taken under load.",
            measurement=True,
            computed=True,
            since=7,
            width=10,
        ),
        _c(
            "layout",
            INT,
            "The layout version the runner wrote this row under: validate expects a value "
            "or a reason in every measured column of that layout. Empty in rows recorded "
            "before layout 8, which validate judges by the newest measured column they fill.",
            computed=True,
            since=8,
            width=8,
        ),
        _c(
            "probe_peak_flops",
            NUMBER,
            "This attempt's own matrix-multiply probe in the variant's precision (FLOP/s), "
            "run after its timed phases: on the CPU one thread's CPU clock times the cores its "
            "threads can occupy, on a GPU CUDA events. The campaign's peak (Manifest "
            "matmul_peak_flops) is the maximum of its attempts' probes.",
            measurement=True,
            computed=True,
            since=8,
            width=16,
        ),
        _c(
            "probe_fp32_peak_flops",
            NUMBER,
            "The same probe in fp32 (FLOP/s).",
            measurement=True,
            computed=True,
            since=8,
            width=16,
        ),
        _c(
            "probe_s",
            SECONDS,
            "Seconds the probe took (matrix products in fp32 and the variant's precision, "
            "and a copy): its cost to the attempt, outside the measured window.",
            measurement=True,
            computed=True,
            since=8,
            width=10,
        ),
        _c(
            "probe_others_share",
            RATIO,
            "The part of the whole machine other processes took during the probe (as "
            "others_cpu_share for the window). Above 0.25, here or in others_cpu_share, "
            "utilisation is left empty with its reason.",
            measurement=True,
            computed=True,
            since=8,
            width=10,
        ),
        _c(
            "cold_pass_s",
            SECONDS,
            "Classification: one pass over the whole corpus right after the model is "
            "loaded, before any warm-up, on the host clock with the device synchronised: what "
            "a batch job meeting a new corpus pays for the shapes it first sees. Measured on "
            "repetition 1 of each variant only (it adds one window per variant, not per "
            "attempt); outside load_s and the campaign's phases, charged in the Settlement's "
            "projected hours.",
            measurement=True,
            computed=True,
            since=8,
            width=10,
        ),
        _c(
            "requests_sent",
            INT,
            "Serving: measured requests sent (warm-up requests not counted).",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "requests_completed",
            INT,
            "Serving: measured requests whose stream ended with a finish reason.",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "requests_failed",
            INT,
            "Serving: measured requests that failed; the notes count them by reason (HTTP error, "
            "stream cut, unreachable, interrupted...).",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "ttft_p50_ms",
            NUMBER,
            "Serving: median time to first token (ms), the first streamed text minus the "
            "request's actual send, over the completed requests.",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "ttft_p90_ms",
            NUMBER,
            "Serving: 90th percentile of the time to first token (ms).",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "ttft_p99_ms",
            NUMBER,
            "Serving: 99th percentile of the time to first token (ms).",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "tpot_p50_ms",
            NUMBER,
            "Serving: median time per output token (ms): a request's last piece minus its first, "
            "over its output tokens minus one.",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "tpot_p99_ms",
            NUMBER,
            "Serving: 99th percentile of the time per output token (ms).",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "itl_p99_ms",
            NUMBER,
            "Serving: 99th percentile of the gaps between two streamed pieces (ms), pooled over "
            "requests.",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "output_tokens_per_s",
            NUMBER,
            "Serving: output tokens of the completed requests per second of the window (first "
            "measured send to last measured end).",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "goodput_rps",
            NUMBER,
            "Serving: completed requests meeting every latency target, per second of the window.",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "good_output_tokens",
            INT,
            "Serving: output tokens of the requests meeting every latency target: the tokens the "
            "Settlement's cost per million output tokens divides by.",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "targets_met",
            YESNO,
            "Serving: yes when the attempt meets every Protocol latency target at its percentile "
            "(and no request failed); the Summary's highest rate meeting the targets reads it.",
            choices=(YES, NO),
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "client_lag_p99_ms",
            NUMBER,
            "Serving: 99th percentile of how late the client sent its requests (actual minus due "
            "send, ms). Above 10 ms the notes name the client as lagging: the server saw a slower"
            " arrival than declared.",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
    ),
    purpose="Raw table (R12): one row per attempted run, failures and interruptions included.",
    unique=("attempt_id",),
)

MANIFEST = Sheet(
    "Manifest",
    "table",
    (
        _c("manifest_id", required=True, computed=True, width=22),
        _c("recorded_at", DATETIME, required=True, computed=True, width=22),
        _c("variant_id", required=True, computed=True),
        _c("corpus_path", computed=True, width=24),
        _c(
            "corpus_sha256",
            help="SHA-256 over ids and texts in processing order.",
            required=True,
            computed=True,
            width=16,
        ),
        _c("corpus_items", INT, required=True, computed=True),
        _c("processing_order", computed=True),
        _c(
            "strata",
            help="Items per length stratum in this variant's tokenizer.",
            computed=True,
            width=24,
        ),
        _c("truncated", INT, computed=True),
        _c("model_revision", help="SHA-256 over the model folder's files.", computed=True),
        _c("tokenizer_revision", computed=True),
        _c("precision", computed=True),
        _c("quantization", computed=True),
        _c("compile", computed=True),
        _c("attention_backend", computed=True),
        _c("padding", computed=True),
        _c("max_length", INT, computed=True),
        _c("seeds", computed=True),
        _c(
            "determinism",
            help="Determinism state read back from torch at the attempt's "
            "start (deterministic algorithms, cuDNN flags, CUBLAS_WORKSPACE_CONFIG), and the "
            "Protocol's choices it applied (R17).",
            computed=True,
            width=24,
        ),
        _c("process_policy", computed=True),
        _c("os", computed=True, width=24),
        _c("python", computed=True),
        _c("cpu", computed=True, width=24),
        _c("ram_bytes", BYTES, computed=True),
        _c("torch", computed=True),
        _c(
            "backend",
            help="CUDA or ROCm version of the torch build, or 'cpu only' (R4).",
            computed=True,
        ),
        _c("driver", computed=True),
        _c("gpu_name", computed=True, width=20),
        _c("gpu_memory_bytes", BYTES, computed=True),
        _c("compute_capability", computed=True),
        _c("transformers", computed=True),
        _c("code_version", help="Toolkit version and git commit.", computed=True, width=20),
        _c("packages", help="Other package versions.", computed=True, width=30),
        _c(
            "host",
            help="Name of the machine that ran it: attempts merged from another "
            "rented box keep theirs.",
            computed=True,
            since=2,
            width=16,
        ),
        _c(
            "compile_setup",
            help="How a compiled variant is compiled (backend, cache folders "
            "and dynamo reset per attempt, recompile limit), or 'not compiled'.",
            computed=True,
            since=2,
            width=24,
        ),
        _c(
            "gpu_device",
            help="The device the attempts used: its index among the visible "
            "ones, UUID and MIG mode.",
            computed=True,
            since=2,
            width=24,
        ),
        _c(
            "driver_cuda",
            help="CUDA version the installed driver supports (the torch build's is in backend).",
            computed=True,
            since=2,
        ),
        _c(
            "gpu_packages",
            help="triton and nvidia-* wheels: the CUDA libraries torch loads.",
            computed=True,
            since=2,
            width=30,
        ),
        _c(
            "fp32_matmul",
            help="float32 products as pinned (full precision, TF32 off) and "
            "read back, with any variable forcing TF32 (R16).",
            computed=True,
            since=2,
            width=24,
        ),
        _c(
            "environment_variables",
            help="Visible devices, module loading, allocator and "
            "tokenizer settings, TF32 overrides.",
            computed=True,
            since=2,
            width=30,
        ),
        _c(
            "software_stack",
            help="System / GPU (gfx architecture on AMD, compute "
            "capability on NVIDIA) / ROCm or CUDA / framework, as read from the machine, on one "
            "line to check against the vendor's compatibility matrix (R4); what could not be "
            "read says why.",
            computed=True,
            since=3,
            width=40,
        ),
        _c(
            "matmul_peak_flops",
            NUMBER,
            "The machine's matrix-multiply peak in the variant's "
            "precision (FLOP/s): the best torch.mm rate of the campaign's probes on this "
            "machine so far, one after each attempt's timed phases (Attempts "
            "probe_peak_flops); a new maximum gives the attempts after it a row of their own.",
            measurement=True,
            computed=True,
            since=3,
            width=24,
        ),
        _c(
            "fp32_matmul_peak_flops",
            NUMBER,
            "The same maximum in fp32.",
            measurement=True,
            computed=True,
            since=3,
            width=24,
        ),
        _c(
            "memory_bandwidth_bytes_s",
            NUMBER,
            "Best copy rate of the campaign's probes so far (bytes read + written per "
            "second; the attempt's threads, wall clock).",
            measurement=True,
            computed=True,
            since=3,
            width=24,
        ),
        _c(
            "peak_probe",
            help="How the peaks were measured: how many probes, and for each figure the "
            "probe that set it (sizes, repeats, clock, threads, seconds, load).",
            computed=True,
            since=3,
            width=30,
        ),
        _c(
            "catalog_peaks",
            help="On a GPU, the catalog's figures (tariffs/gpus.csv) beside "
            "the measurement; never in its place.",
            computed=True,
            since=3,
            width=30,
        ),
        _c(
            "engine",
            help="The engine that ran the attempts and its version (torch's is in "
            "torch; a python: predictor's package version).",
            computed=True,
            since=5,
            width=20,
        ),
        _c(
            "engine_artifact",
            help="What the engine ran, by hash: the ONNX file's SHA-256 and "
            "the session's providers, the converted CTranslate2 model's hash and compute type, "
            "or a python: predictor's module file hashes.",
            computed=True,
            since=5,
            width=30,
        ),
        _c(
            "endpoint",
            help="Serving: the endpoint measured as it describes itself: base URL, served "
            "model, the models /v1/models lists, its server header and the version routes "
            "that answered.",
            computed=True,
            since=10,
            width=30,
        ),
    ),
    purpose="What was really installed and run, per variant and environment (R3-R4, R17).",
    unique=("manifest_id",),
)

#: Where rented capacity is sold: on demand, or spot (interruptible).
MARKETS = ("on-demand", "spot")

TARIFFS = Sheet(
    "Tariffs",
    "table",
    (
        _c("catalog_date", help="Date of the catalog snapshot, YYYY-MM-DD.", required=True),
        _c("gpu_slug", required=True),
        _c("gpu_name", required=True, width=20),
        _c("cards_per_lot", INT, "Cards in one lot: a B200 lot already holds two.", required=True),
        _c("plan_days", INT, "3, 7 or 30; empty on a metered row (price_per_hour)."),
        _c(
            "price_per_lot_usd",
            USD,
            "Flat price of one lot for the whole plan, in the row's "
            "currency (USD when currency is empty); empty on a metered row.",
            currency="currency",
            blank_currency="USD",
        ),
        _c("source", width=30),
        # The price column keeps its name (columns are never renamed): currency says what
        # its amount is in, empty meaning USD as before; provider names whose snapshot it is.
        _c(
            "provider",
            help="Who sells these lots; empty in the shipped snapshot. A snapshot "
            "is one provider's prices of one date (`iteralab tariffs import`).",
            width=16,
            since=3,
        ),
        _c(
            "currency",
            help="ISO 4217 code of price_per_lot_usd, e.g. EUR; empty means USD. "
            "Prices in two currencies are never compared or converted.",
            width=9,
            since=3,
        ),
        # A metered row (sold by the hour or second) fills these three and leaves plan_days
        # and price_per_lot_usd empty; the flat rows leave them empty.
        _c(
            "market",
            CHOICE,
            "A metered row's market: spot capacity can be reclaimed at any time.",
            choices=MARKETS,
            width=10,
            since=9,
        ),
        _c(
            "price_per_hour",
            MONEY,
            "A metered row's price of one lot per hour, in the row's currency.",
            width=12,
            currency="currency",
            blank_currency="USD",
            since=9,
        ),
        _c(
            "billing_seconds",
            INT,
            "A metered row's billing step in seconds: 1 billed to the second, 3600 by the "
            "started hour.",
            width=9,
            since=9,
        ),
    ),
    purpose="Catalog snapshots, one provider and date each; editable: flat 3-, 7- or 30-day "
    "plans, and metered prices by the hour or second. A missing price is a missing row.",
)

BILLINGS = ("flat-3d", "flat-7d", "flat-30d", "hourly", "per-second")
#: Days of a flat billing, by its name.
FLAT_DAYS = {"flat-3d": 3, "flat-7d": 7, "flat-30d": 30}

RENTALS = Sheet(
    "Rentals",
    "table",
    (
        _c(
            "rental_id",
            help="Short id of what was rented once, e.g. r1-4090; Variants name it.",
            required=True,
        ),
        _c("provider", help="Who rents it out.", required=True),
        _c(
            "reference",
            help="Order or invoice reference, as the provider's billing export "
            "writes it: `iteralab ledger import` matches on it.",
            width=18,
        ),
        _c("gpu_slug", help="Catalog slug of the GPU rented (joins Tariffs).", required=True),
        _c(
            "cards_per_lot",
            INT,
            "Cards in one lot: a B200 lot already holds two.",
            required=True,
            width=9,
        ),
        _c("lots", INT, "Lots rented (not cards).", required=True, width=7),
        _c(
            "billing",
            CHOICE,
            "flat-3d/7d/30d: one price for the whole plan, however short "
            "the use; hourly or per-second: what the provider metered (type the amount).",
            required=True,
            choices=BILLINGS,
            width=10,
        ),
        _c(
            "market",
            CHOICE,
            "spot (interruptible) suits checkpointed batch work only.",
            required=True,
            choices=MARKETS,
            width=10,
        ),
        _c("start", DATETIME, "ISO 8601 with offset.", width=22),
        _c("end", DATETIME, width=22),
        _c(
            "amount",
            MONEY,
            "What the provider charges for this rental, all lots, in its "
            "currency. Empty for a flat plan: the Tariffs price x lots is used.",
            width=12,
            currency="currency",
        ),
        _c(
            "currency",
            help="ISO 4217 code, e.g. USD: amounts in different currencies are "
            "never added together.",
            required=True,
            width=9,
        ),
        _c(
            "source",
            help="Where the amount comes from: invoice, order page, or an example "
            "figure typed for a demo (say so).",
            width=30,
        ),
    ),
    purpose="Each lot actually rented, once (R21): several variants share a rental. The "
    "Settlement counts each rental once and checks it against the provider's ledger.",
    unique=("rental_id",),
    since=2,
)

VERIFICATION = Sheet(
    "Verification",
    "table",
    (
        _c("variant_id", required=True),
        _c(
            "verified",
            YESNO,
            "Your own confirmation that the outputs were checked (seed 000: "
            "the tool's verdict alone does not count).",
            required=True,
            choices=(YES, NO),
            width=9,
        ),
        _c(
            "confirmed_corpora",
            INT,
            "Distinct validated corpora you confirm (R22): each "
            "accepted corpus once, never repetitions.",
            width=10,
        ),
        _c("verified_by", help="Who checked.", width=16),
        _c("verified_at", DATETIME, width=22),
        _c(
            "checked",
            help="What was checked: ids, format, coverage, metric, samples read...",
            width=40,
        ),
    ),
    purpose="The user's own verification per configuration: accepted corpora enter the cost "
    "only once confirmed here; until then the Settlement's cell stays empty with its reason.",
    unique=("variant_id",),
    since=2,
)

LEDGER = Sheet(
    "Ledger",
    "table",
    (
        _c("date", help="As the billing export gives it.", required=True, computed=True, width=12),
        _c("description", computed=True, width=30),
        _c(
            "reference",
            help="Order or invoice reference: matched with Rentals.reference.",
            computed=True,
            width=18,
        ),
        _c(
            "amount",
            NUMBER,
            "Charged amount (a refund is negative).",
            required=True,
            computed=True,
            width=12,
            currency="currency",
        ),
        _c("currency", required=True, computed=True, width=9),
        _c("source", help="File and line it was imported from.", computed=True, width=30),
    ),
    purpose="The provider's billing export, as imported by `iteralab ledger import`: the "
    "Settlement reconciles it with Rentals.",
    since=2,
)

SCHEDULE = Sheet(
    "Schedule",
    "table",
    (
        _c(
            "phase",
            CHOICE,
            required=True,
            choices=(
                "install",
                "check",
                "warm-up",
                "comparison",
                "planned resume",
                "evaluation",
                "export",
                "waiting",
            ),
        ),
        _c(
            "start",
            DATETIME,
            "ISO 8601 with offset, e.g. 2026-12-07T09:00+01:00.",
            required=True,
            width=22,
        ),
        _c("end", DATETIME, required=True, width=22),
        _c("notes", width=30),
        _c(
            "from_h",
            NUMBER,
            "Real elapsed hours from the earliest start to this phase's "
            "start (read from the offsets; DST-proof).",
            computed=True,
            width=9,
        ),
        _c(
            "to_h",
            NUMBER,
            "Real elapsed hours from the earliest start to this phase's end.",
            computed=True,
            width=9,
        ),
        _c("hours", NUMBER, "This phase's length: to_h - from_h.", computed=True, width=9),
        _c(
            "counted_hours",
            NUMBER,
            "Hours of this phase not already in an earlier-starting "
            "phase: overlaps are counted once (R19).",
            computed=True,
            width=9,
        ),
        _c(
            "window_hours",
            NUMBER,
            "First row: the access window, the union of all phases (sum of counted_hours).",
            computed=True,
            width=10,
        ),
        _c(
            "span_hours",
            NUMBER,
            "First row: first start to last end; a plan runs without "
            "pause, so it must cover this span (gaps between phases included).",
            computed=True,
            width=10,
        ),
        _c(
            "covering_plans",
            TEXT,
            "First row: the 3-, 7- and 30-day plans that cover the span "
            "(R20). Covering says nothing about finishing on time.",
            computed=True,
            width=30,
        ),
    ),
    purpose="Access window from instance preparation to retrieving results (R19). Type the "
    "phases; the grey columns are refreshed by `iteralab report`.",
)

MEMORY = Sheet(
    "Memory",
    "table",
    (
        _c("variant_id", required=True),
        _c(
            "estimate_bytes",
            BYTES,
            "Planner's total: tensors plus the allocator and runtime "
            "margin (the memory a card must hold).",
            measurement=True,
            computed=True,
        ),
        _c(
            "estimate_tensors_bytes",
            BYTES,
            "Planner's tensors before the margin: compare with observed allocated.",
            measurement=True,
            computed=True,
        ),
        _c("estimate_basis", help="The estimate's terms and formula.", computed=True, width=30),
        _c(
            "observed_allocated_bytes",
            BYTES,
            "Largest max_memory_allocated over the variant's attempts.",
            measurement=True,
            computed=True,
        ),
        _c(
            "observed_reserved_bytes",
            BYTES,
            "Largest max_memory_reserved over the variant's attempts.",
            measurement=True,
            computed=True,
        ),
        _c("observed_host_rss_bytes", BYTES, measurement=True, computed=True),
        _c(
            "observed_over_estimate",
            NUMBER,
            "observed allocated / estimated tensors (may exceed 1: then the report flags it).",
            measurement=True,
            computed=True,
        ),
        _c(
            "flag",
            help="OVER ESTIMATE when allocated > tensors, reserved > total or the "
            "observed KV cache > its estimate.",
            computed=True,
            width=24,
        ),
        _c(
            "estimate_kv_cache_bytes",
            BYTES,
            "Generation: the planner's KV cache, one term of "
            "estimate_tensors_bytes: the variant's batch_size sequences of max_length + the "
            "Protocol's max_new_tokens tokens, in the variant's precision (an upper bound: most "
            "prompts are shorter than max_length).",
            measurement=True,
            computed=True,
            since=4,
        ),
        _c(
            "observed_kv_cache_bytes",
            BYTES,
            "Generation: largest Attempts kv_cache_peak_bytes "
            "over the variant's attempts, exclusions left out.",
            measurement=True,
            computed=True,
            since=4,
        ),
    ),
    purpose="Estimate beside observation (R18); the estimate never replaces measuring.",
    input=False,
)

#: Raw durations shown per variant in Summary: the five runs of R11 (no p95 from five).
RUN_COLUMNS = 5

SUMMARY = Sheet(
    "Summary",
    "table",
    (
        _c("variant_id", required=True, computed=True),
        _c("series", INT, computed=True, width=8),
        _c(
            "attempts",
            INT,
            "Attempts rows of the variant: failures, interruptions and exclusions included.",
            computed=True,
            width=9,
        ),
        _c("completed", INT, computed=True, width=9),
        _c("failed", INT, computed=True, width=9),
        _c("interrupted", INT, computed=True, width=9),
        _c(
            "excluded",
            INT,
            "Excluded for a documented external cause under the protocol's "
            "exclusion_rule, the same for every variant (R14): counted, kept out of the "
            "statistics.",
            computed=True,
            width=9,
        ),
        _c(
            "pre_amendment",
            INT,
            "Measured under a protocol amended since (R2): counted, kept out of the statistics.",
            computed=True,
            width=9,
        ),
        _c(
            "successes",
            INT,
            "Runs in the statistics: status completed, ids match, measured_s "
            "present, not excluded, not pre-amendment.",
            computed=True,
            width=9,
        ),
        *(
            _c(
                f"run_{i}_s",
                SECONDS,
                f"measured_s of repetition {i} when it is a success; empty otherwise.",
                computed=True,
                width=9,
            )
            for i in range(1, RUN_COLUMNS + 1)
        ),
        _c(
            "median_s",
            SECONDS,
            "Median of the successes' measured_s: a live formula over Attempts.",
            measurement=True,
            computed=True,
            width=10,
        ),
        _c("min_s", SECONDS, computed=True, width=10),
        _c("max_s", SECONDS, computed=True, width=10),
        _c("throughput_items_s", NUMBER, "Corpus items per second at the median.", computed=True),
        _c(
            "campaign_s",
            SECONDS,
            "Median over the successes of load + warm-up + measured + "
            "evaluation + export: one corpus end to end (R9, R23).",
            computed=True,
            width=10,
            since=2,
        ),
        _c(
            "quality_verdict",
            help="fail when an evaluated success fails; pass when every "
            "evaluated success passes; not evaluated otherwise.",
            computed=True,
        ),
        _c(
            "equal_quality",
            YESNO,
            "yes: quality passes the locked threshold and tolerance, "
            "every attempt finished the whole corpus (feasible, R18), and the variant joins the "
            "cost comparison; no: shown, kept out of it (R16), the reason in notes.",
            choices=(YES, NO),
            computed=True,
            width=9,
        ),
        _c("metric_value", RATIO, "Median metric over the successes.", computed=True),
        _c(
            "reference_agreement",
            RATIO,
            "Lowest agreement with the reference over the successes.",
            computed=True,
        ),
        _c(
            "mem_allocated_peak_bytes",
            BYTES,
            "Largest over the variant's attempts, exclusions left out.",
            computed=True,
        ),
        _c("mem_reserved_peak_bytes", BYTES, computed=True),
        _c("host_rss_peak_bytes", BYTES, computed=True),
        _c("notes", computed=True, width=40),
        _c(
            "utilisation",
            NUMBER,
            "Median over the successes of Attempts utilisation: "
            "real-token FLOP rate / the measured matrix-multiply peak.",
            measurement=True,
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "padding_waste",
            RATIO,
            "Median over the successes of Attempts padding_waste.",
            computed=True,
            since=3,
            width=10,
        ),
        _c(
            "limited_by",
            help="What holds the variant below the peak: padding, precision, "
            "batch too small, memory bound (from the figures beside it).",
            computed=True,
            since=3,
            width=40,
        ),
        _c(
            "ttft_s",
            SECONDS,
            "Generation: median over the successes of Attempts ttft_s "
            "(time to first token: the prefill); a live formula over Attempts.",
            measurement=True,
            computed=True,
            since=4,
            width=10,
        ),
        _c(
            "decode_tokens_per_s",
            NUMBER,
            "Generation: median over the successes of Attempts "
            "decode_tokens_per_s (the prefill left out); a live formula over Attempts.",
            measurement=True,
            computed=True,
            since=4,
        ),
        _c(
            "decode_ceiling_fraction",
            RATIO,
            "Generation: median over the successes of "
            "Attempts decode_ceiling_fraction (decode tokens/s / the memory bandwidth's "
            "ceiling); a live formula over Attempts.",
            measurement=True,
            computed=True,
            since=4,
            width=10,
        ),
        _c(
            "cold_pass_s",
            SECONDS,
            "Median over the successes of Attempts cold_pass_s (recorded on repetition 1): one "
            "pass over the corpus before any warm-up, beside median_s; the projected hours "
            "charge each corpus the cold pass where it is slower than median_s.",
            measurement=True,
            computed=True,
            since=8,
            width=10,
        ),
        _c(
            "request_rate",
            NUMBER,
            "Serving: the variant's request_rate (Variants): requests per second, or in "
            "flight under a fixed concurrency.",
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "served_s",
            SECONDS,
            "Serving: the successes' measured_s summed: how long they held the endpoint, "
            "the hours a cost per token is paid for.",
            computed=True,
            since=10,
            width=10,
        ),
        _c(
            "targets_met",
            YESNO,
            "Serving: yes when every success met every Protocol latency target (Attempts "
            "targets_met).",
            choices=(YES, NO),
            measurement=True,
            computed=True,
            since=10,
            width=9,
        ),
        _c(
            "good_output_tokens",
            INT,
            "Serving: output tokens of the successes' requests that met every latency "
            "target, summed: what the cost per million output tokens divides by.",
            measurement=True,
            computed=True,
            since=10,
            width=12,
        ),
        _c(
            "highest_rate",
            NUMBER,
            "Serving: the highest request_rate meeting every latency target among the "
            "variants on the same endpoint (model_path without its model name) and card "
            "(gpu_slug): how much load it carries within the targets.",
            measurement=True,
            computed=True,
            since=10,
            width=10,
        ),
    ),
    purpose="Per variant: counts, raw durations, median/min/max (R14), quality gate (R16). "
    "Refreshed by `iteralab report`; medians, mins and maxes are live formulas over Attempts.",
    input=False,
)

SETTLEMENT = Sheet(
    "Settlement",
    "table",
    (
        _c(
            "item",
            help="A configuration (variant id) or another project cost.",
            computed=True,
            width=20,
        ),
        _c(
            "kind",
            CHOICE,
            computed=True,
            choices=("configuration", "other cost", "rental", "total incurred", "ledger only"),
        ),
        _c("gpu_slug", computed=True),
        _c("catalog_date", help="Tariffs snapshot the price comes from.", computed=True, width=11),
        _c("plan_days", INT, computed=True, width=9),
        _c("lots", INT, "Lots rented (not cards).", computed=True, width=7),
        _c(
            "cards_per_lot",
            INT,
            "From Tariffs: a B200 lot already holds two cards.",
            computed=True,
            width=9,
        ),
        _c("cards", INT, "lots x cards_per_lot: the GPUs those lots hold.", computed=True, width=7),
        _c(
            "price_per_lot_usd",
            USD,
            "Decision: from Tariffs (gpu_slug, plan_days, "
            "catalog_date), in USD; a rental's own price is in price_per_lot.",
            computed=True,
        ),
        _c(
            "budget_usd",
            USD,
            "price_per_lot_usd x lots: the flat plan, however short the run; "
            "for another cost, its amount.",
            computed=True,
        ),
        _c(
            "accepted_corpora",
            INT,
            "Distinct validated corpora (R22), not repetitions; empty until outputs are validated.",
            computed=True,
        ),
        _c(
            "cost_per_accepted_usd",
            USD_OR_UNDEFINED,
            "budget / accepted corpora, for a plan "
            "actually rented for those corpora; 'undefined' when none (the budget stays). Empty "
            "on a projected configuration (since layout 5): a plan sized for the expected "
            "outputs divided by a benchmark count blends a forecast with a count; read "
            "projected_cost_per_expected_usd (forecast) and the total's spent_per_accepted.",
            computed=True,
        ),
        _c("quality_verdict", computed=True),
        _c("median_s", SECONDS, computed=True),
        _c(
            "campaign_hours",
            NUMBER,
            "The Schedule's span_hours: the rental window the plan "
            "must cover (install to export, gaps included); not campaign_s, which is one "
            "corpus's processing.",
            computed=True,
        ),
        _c("grounds", help="Why this cost applies.", computed=True, width=40),
        _c(
            "part",
            CHOICE,
            "incurred: money spent, each rental once; decision: the "
            "production projection per configuration.",
            computed=True,
            choices=("incurred", "decision"),
            since=2,
            width=10,
        ),
        _c("rental_id", computed=True, since=2),
        _c("variants", help="The variants a rental served.", computed=True, since=2, width=24),
        _c(
            "amount",
            MONEY,
            "Incurred: what the rental or cost charges, in its currency; on a "
            "total row, the sum per currency, or 'incomplete' while a row lacks its amount.",
            computed=True,
            since=2,
            width=12,
            currency="currency",
        ),
        _c("currency", computed=True, since=2, width=9),
        _c(
            "ledger_status",
            help="Against the imported ledger: matched, amount differs, not in "
            "the ledger, in the ledger only.",
            computed=True,
            since=2,
            width=24,
        ),
        _c(
            "campaign_s",
            SECONDS,
            "Decision: one corpus end to end (Summary campaign_s).",
            computed=True,
            since=2,
            width=10,
        ),
        _c(
            "projected_corpora",
            INT,
            "Decision: the Protocol's expected outputs.",
            computed=True,
            since=2,
            width=10,
        ),
        _c(
            "projected_hours",
            NUMBER,
            "Decision: projected_corpora x (campaign_s + what the Summary's "
            "cold_pass_s takes beyond median_s: each corpus is met cold) / 3600, spread over "
            "the lots: a projection, not a measurement.",
            computed=True,
            since=2,
            width=10,
        ),
        _c(
            "deadline_check",
            help="Decision: whether the projection finishes before the Protocol's deadline.",
            computed=True,
            since=2,
            width=30,
        ),
        _c(
            "price_per_lot",
            MONEY,
            "Incurred: a rental's price per lot from Tariffs, in its "
            "currency (amount = price_per_lot x lots); price_per_lot_usd stays the decision "
            "part's, in USD.",
            computed=True,
            since=4,
            width=12,
            currency="currency",
        ),
        _c(
            "projected_cost_per_expected_usd",
            USD,
            "Decision: a FORECAST, budget_usd / "
            "projected_corpora: what one expected corpus would cost on this plan. It becomes an "
            "accepted figure only as outputs are confirmed (spent_per_accepted).",
            computed=True,
            since=5,
            width=14,
        ),
        _c(
            "spent_per_accepted",
            MONEY,
            "Total incurred rows: the total / the corpora accepted "
            "and confirmed in this campaign (accepted_corpora on the same row), in the row's "
            "currency; 'undefined' when none; empty while the total is incomplete or nothing "
            "is confirmed.",
            computed=True,
            since=5,
            width=14,
            currency="currency",
        ),
        _c(
            "counted_amount",
            MONEY,
            "Rentals and other costs: what the row adds to its "
            "currency's total (its amount; empty while it has none, which makes the total "
            "incomplete). A total sums this column by currency, so the rows may be sorted in "
            "any order and no total counts another.",
            computed=True,
            since=5,
            width=12,
            currency="currency",
        ),
        _c(
            "known_subtotal",
            MONEY,
            "Total incurred rows: the sum of the amounts known so "
            "far, shown beside an 'incomplete' total (never in its place).",
            computed=True,
            since=5,
            width=14,
            currency="currency",
        ),
        _c(
            "price_per_hour",
            MONEY,
            "Incurred: a metered rental's price of one lot per hour from Tariffs, in its "
            "currency (amount = price_per_hour x billed_seconds / 3600 x lots, to the cent).",
            computed=True,
            since=9,
            width=12,
            currency="currency",
        ),
        _c(
            "billed_seconds",
            INT,
            "Incurred: a metered rental's start-to-end seconds, rounded up to whole "
            "billing steps of its Tariffs row.",
            computed=True,
            since=9,
            width=10,
        ),
        _c(
            "cost_per_million_tokens",
            NUMBER,
            "Serving configurations: the price per hour of one lot of the card at the "
            "Settlement's price for it, the cheapest cover of the Schedule's span as for a "
            "batch job (a metered price per hour, or a flat plan's price per lot / its hours: "
            "the endpoint serving at its rate every hour of the plan) x the Summary's "
            "served_s / 3600 / its good_output_tokens x 1,000,000, in USD (the grounds name "
            "the price); empty without a token served within target or a price.",
            computed=True,
            since=10,
            width=12,
        ),
    ),
    purpose="Per acceptable configuration: plan, lots, budget, accepted corpora, cost per "
    "accepted corpus (R21-R23); other project costs on their own rows with their grounds. "
    "Refreshed by `iteralab report`.",
    input=False,
)

#: The Settlement cells of an "other cost" row, typed by a person (blue, kept by reports).
OTHER_COST_COLUMNS = ("item", "kind", "amount", "currency", "grounds")

DECISION = Sheet(
    "Decision",
    "form",
    (
        _c("chosen_configuration", help="Variant and GPU chosen.", width=60),
        _c("load_handled", help="The load this configuration handles (corpora, deadline)."),
        _c("reasons", help="Why: quality, cost, schedule, failures."),
        _c("remaining_uncertainty", help="What the series did not settle (R15)."),
        _c(
            "draft",
            help="Filled by `iteralab report` from the data; edit the fields above.",
            computed=True,
        ),
        _c("reviewed_by", help="Who checked this memo."),
        _c(
            "report_run",
            help="Which `iteralab report` run the memo and draft reflect: its "
            "time and a hash of each input sheet then. `iteralab validate` names a memo "
            "older than the numbers it quotes (a tariff, rental, ledger line, attempt or "
            "confirmation changed since): run `iteralab report` again.",
            computed=True,
            since=5,
        ),
    ),
    purpose="Decision memo (R23). Your edits survive `iteralab report`.",
)

AUDIT = Sheet(
    "Audit",
    "table",
    (
        _c("at", DATETIME, required=True, computed=True, width=22),
        _c(
            "action",
            CHOICE,
            "lock, amend, exclude; prices: Tariffs, Rentals and Schedule "
            "as attempts were set against them, and each later edit; merge: attempts joined "
            "from another machine's copy, with their provenance; bookkeeping: the scenario's "
            "wording, a variant's description, notes, rental_id or label edited after the "
            "lock (no attempt voided); reanchor: the chains' anchor moved to the rows as they "
            "stand (a copy saved over the workbook), with the anchor it replaced.",
            required=True,
            choices=("lock", "amend", "exclude", "prices", "merge", "bookkeeping", "reanchor"),
            computed=True,
        ),
        _c("protocol_sha256", required=True, computed=True, width=64),
        _c("tool_version", required=True, computed=True),
        _c("reason", width=40),
        _c("details", width=40),
        _c(
            "row_sha256",
            help="Hash chained to the previous Audit row (as Attempts rows are).",
            computed=True,
            since=6,
            width=20,
        ),
    ),
    purpose="Protocol lock and amendment log (R2): changes are visible, never silent.",
    input=False,
)

OVERVIEW = Sheet(
    "Overview",
    "text",
    purpose="One page for a reviewer: the decision, the incurred total per currency with its "
    "ledger status, spent per accepted corpus, the forecast per expected corpus, the verdicts "
    "and any EXAMPLE or quick-demo warning; each figure a formula into the sheet that holds "
    "it. Rebuilt at every save.",
    input=False,
    since=5,
)

SHEETS: tuple[Sheet, ...] = (
    GUIDE,
    OVERVIEW,
    PROTOCOL,
    VARIANTS,
    ATTEMPTS,
    MANIFEST,
    TARIFFS,
    RENTALS,
    SCHEDULE,
    MEMORY,
    SUMMARY,
    VERIFICATION,
    SETTLEMENT,
    LEDGER,
    DECISION,
    AUDIT,
)
SHEET_BY_NAME = {s.name: s for s in SHEETS}

#: Sheets whose computed cells hold the report's formulas: a save that does not
#: recompute them writes the formulas it read back (toolkit.workbook.store).
FORMULA_SHEETS = (SCHEDULE.name, SUMMARY.name, SETTLEMENT.name)

#: Sheets with a schema (every sheet of values: a text sheet holds prose).
SCHEMA_SHEETS = tuple(s.name for s in SHEETS if s.kind != "text")

#: Sheets whose content a person types and every re-render must keep.
INPUT_SHEETS = tuple(s.name for s in SHEETS if s.input and s.kind != "text")

GUIDE_STEPS = (
    "1. Protocol: answer every field before any timing (R1). `iteralab validate` lists what "
    "is missing.",
    "2. Variants: one row per declared variant. In series 1, batch is the only variable (R6).",
    "3. Tariffs, Rentals and Schedule: the catalog snapshot, what you rent (each lot once, "
    "shared by the variants that ran on it) and the access window's phases (R19-R21).",
    "4. `iteralab lock WORKBOOK`: fixes Protocol and Variants with a SHA-256 (Audit sheet); "
    "`iteralab check WORKBOOK` loads each model once and estimates hours and cost.",
    "5. `iteralab run WORKBOOK`: appends one Attempts row per attempted run, failures included.",
    "6. Verification: confirm the outputs you checked yourself (who, when, what, how many "
    "corpora); only those count in the cost per accepted corpus.",
    "7. `iteralab report WORKBOOK`: refreshes Summary, Memory, Settlement and the Decision draft.",
    "8. Edit the Decision memo; hand the workbook, predictions and manifest to reviewers.",
    "Blue cells are typed by a person; grey cells are written by the toolkit. A measurement "
    "that does not exist is an empty cell with its reason, never 0.",
    'Changing a locked protocol: `iteralab amend WORKBOOK --reason "..."` (logged in Audit). '
    "Bookkeeping (the scenario's wording, a variant's description, notes, rental_id, label) "
    "needs no amendment: `iteralab report` logs its edits in Audit.",
    "Formulas and values: the grey cells of Summary (counts, runs, median, min, max, "
    "throughput), Settlement (prices, budgets, costs) and Schedule (hours, window, covering "
    "plans) are live formulas over the sheets they name, saved with the values iteralab "
    "computed; Excel recalculates them when the file opens, and LibreOffice and Gnumeric "
    "compute the same. Memory, Summary's quality columns and notes, and the Decision draft are "
    "values written by iteralab (refreshed by `iteralab report` and `iteralab run` only).",
)
