"""Every cap the checkpoint readers enforce, in one place, with the reason for each number.

A checkpoint is hostile input: its headers, indexes and pickles are written by whoever made
it. Each reader checks these caps *before* allocating or recursing in proportion to a
number the file declares, and reports an exceeded cap as DF022 `reader-limit-exceeded`
(never a crash, a hang or a huge allocation). The values are far above anything a draft (or
a full target model) needs, and low enough that a check stays within a few seconds and
200 MB of memory whatever the bytes.
"""

from __future__ import annotations

# ------------------------------------------------------------------------- JSON documents

#: Nesting depth of a JSON document. Producers write at most ~5 levels
#: (`speculators_config` -> `proposal_methods` -> list -> object -> list); 64 leaves wide
#: room and stays far below CPython's recursion limit (1000) inside `json.loads`.
MAX_JSON_DEPTH = 64
#: Digits in one JSON number. The largest legitimate value is a 64-bit offset (20 digits)
#: or a float with 17 significant digits; 40 is double that and far below CPython's
#: 4300-digit `int()` limit, which must never be reached.
MAX_JSON_NUMBER_DIGITS = 40
#: Size of a `config.json`, shard index, generation config or other JSON file. The largest
#: real configs (multimodal targets) are ~100 KB and a 20k-tensor index is ~2 MB; 32 MiB
#: keeps the text, its decoded copy and the parsed objects well under 200 MB.
MAX_JSON_FILE_BYTES = 32 * 1024 * 1024
#: Object members (keys outside strings) in one JSON document. A 20k-tensor index has 20k;
#: 1M bounds the memory of the parsed objects.
MAX_JSON_MEMBERS = 1_000_000
#: Objects and arrays in one JSON document (a safetensors header has three per tensor);
#: 1M bounds the parsed objects and the time of the depth scan.
MAX_JSON_CONTAINERS = 1_000_000
#: Values in one JSON document (commas outside strings, plus one). Real configs hold a few
#: hundred, a 20k-tensor index 20k; a million-element aux-id list would make every check
#: and every message that quotes the list slow and huge, so 100k is the cap.
MAX_JSON_ITEMS = 100_000
#: Strings (keys and values) in one JSON document, counted by their quotes before anything
#: is parsed: the scan and the parser allocate per string, so this bounds their memory.
MAX_JSON_STRINGS = 1_000_000

# ------------------------------------------------------------------------ safetensors

#: Header bytes of one safetensors file. A header is ~150 bytes per tensor, so 16 MiB holds
#: ~100k tensors: five times :data:`MAX_TENSORS_PER_FILE`. (The reference implementation
#: refuses above 100 MB; a header draftfit refuses below that is reported as a cap.)
MAX_SAFETENSORS_HEADER_BYTES = 16 * 1024 * 1024
#: Tensors declared by one weight file. A full 671B-parameter target has ~90k tensors over
#: 163 shards (~600 per shard); a draft has ~15. 20k per file is generous for both.
MAX_TENSORS_PER_FILE = 20_000
#: Characters in one tensor name. Real names are under 100 (`model.layers.60.mlp.experts.
#: 255.down_proj.weight_scale_inv` is 55); every rule matches, renames and quotes names once
#: per engine release, so a megabyte-long name would cost seconds and hundreds of MB in
#: `matrix`. 1024 is ten times the longest real name.
MAX_TENSOR_NAME_CHARS = 1024
#: Dimensions of one tensor: torch supports at most 64 (`MAX_DIMS` in ATen).
MAX_TENSOR_DIMS = 64
#: Largest dimension, offset or byte count a safetensors header may state: the reference
#: implementation reads them as u64 and computes byte sizes without overflow only below this.
MAX_SAFETENSORS_INT = 2**63 - 1

# ------------------------------------------------------------------------ checkpoint folder

#: Weight files (shards) read from one checkpoint. The largest published models ship ~200
#: shards; 4096 bounds the work of a folder (or index) listing thousands of files.
MAX_WEIGHT_FILES = 4096

# ------------------------------------------------------------------------ PyTorch .bin

#: Members of a `.bin` zip archive: torch writes one per storage plus ~5 records, and a
#: state dict has at most a few thousand storages. 100k bounds the central-directory parse.
MAX_ZIP_MEMBERS = 100_000
#: Decompressed size of `data.pkl`: a state dict's pickle is ~150 bytes per tensor, so
#: 64 MiB is ~400k tensors; anything larger is a zip bomb, refused before inflating it.
MAX_PICKLE_BYTES = 64 * 1024 * 1024
#: Opcodes in one pickle: ~20 per tensor in torch's pickles, so 2M is ~100k tensors; it
#: bounds the pre-scan's time whatever the pickle's size.
MAX_PICKLE_OPCODES = 2_000_000
#: Nesting depth of the objects a pickle builds. A state dict is ~6 levels deep (dict ->
#: rebuild call -> argument tuple -> size tuple); 100 is ample. Deeper nesting (tuples or
#: frozensets nested thousands deep, used as dict keys) would overflow the C stack when
#: hashed or compared, so the pre-scan refuses it before anything is built.
MAX_PICKLE_DEPTH = 100
