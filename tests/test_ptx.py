"""grader.ptx: PTX read as the assembler reads it (comments removed, functions, line information,
calls), for the own-kernels check, forbidden_headers and required_ptx."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from grader import ptx
from grader.static import missing_ptx, source_files, static_check
from tests.conftest import spec_of

MODULE = r'''
.file 1 "/sub/kernel.cu"
.file 2 "/cuda/include/cub/agent/agent_scan.cuh"
.file 3 "/odd//path/x.cuh"
.func (.param .b32 func_retval0) _Z4scanPf
(
.param .b64 _Z4scanPf_param_0
)
;
.visible .entry mine(
.param .u64 mine_param_0
)
{
.loc 1 5 1
call.uni (retval0),
_Z4scanPf,
(
param0
);
ret;
}
.visible .entry decoy(
.param .u64 decoy_param_0
)
{
.loc 1 9 1
mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f1,%f2,%f3,%f4};
ret;
}
.func (.param .b32 func_retval0) _Z4scanPf(
.param .b64 _Z4scanPf_param_0
)
{
.loc 2 100 1
ld.global.f32 %f1, [%rd1];
// mma.sync in a comment
/*
.visible .entry fake(
.loc 1 1 1
*/
ret;
}
.visible .entry by_pointer(
.param .u64 by_pointer_param_0
)
{
.loc 1 20 1
call.uni (retval0), %rd4, (param0), prototype_0;
ret;
}
'''


def test_comments_are_removed_but_strings_kept():
    text = 'a // c\n.file 1 "/x//y"\nb /* one\ntwo */ c\n'
    assert ptx.strip_comments(text) == 'a \n.file 1 "/x//y"\nb \n c\n'


def test_cuda_comments_are_read_as_the_compiler_reads_them():
    """Red-team pass 19: backslash-newlines are spliced before comments are found (a splice inside a
    forbidden word, or a `//` that a splice continues, hides nothing), comment markers inside string
    and character literals are text, and every line keeps its number."""
    from grader.static import strip_comments
    text = 'int a; // note \\\nstill the comment\ncub\\\nlas(); const char* s = "//"; cutlass();\n' \
           "char c = '\"'; cute(); /* x */ y;\nR\"(//)\" z;\n"
    out = strip_comments(text, "kernel.cu")
    assert out.split("\n") == ["int a; ", "", 'cublas(); const char* s = "//"; cutlass();', "",
                               "char c = '\"'; cute();         y;", 'R"(//)" z;', ""]


def test_functions_calls_and_line_information():
    m = ptx.parse(MODULE)
    assert m.entries == {"mine", "decoy", "by_pointer"}          # "fake" was in a comment
    assert m.files["3"] == "/odd//path/x.cuh"
    assert m.functions["_Z4scanPf"].files == {"2"}               # declared, then defined: one function
    assert m.reachable({"mine"}) == {"mine", "_Z4scanPf"}
    assert m.files_of("mine") == {"/sub/kernel.cu", "/cuda/include/cub/agent/agent_scan.cuh"}
    assert m.files_of("decoy") == {"/sub/kernel.cu"}
    assert m.reachable({"by_pointer"}) == set(m.functions)      # a call through a pointer can reach anything
    assert m.calls_indirectly("by_pointer") and not m.calls_indirectly("mine")
    assert "mma.sync" in m.code_of({"decoy"}) and "mma.sync" not in m.code_of({"mine"})


def test_required_ptx_counts_the_code_that_runs_without_comments():
    spec = replace(spec_of("ex12_gemm_tensorcore"), required_ptx=(r"mma\.sync",))
    m = ptx.parse(MODULE)
    assert missing_ptx(spec, m.code_of({"decoy"})) == []
    assert missing_ptx(spec, m.code_of({"mine"}), "the PTX of mine") == [
        "the PTX of mine has no instruction matching 'mma\\.sync', which this exercise requires ([features] "
        "required_ptx)"]
    assert missing_ptx(spec, "// mma.sync\n/* mma.sync */ ret;") != []
    # red-team pass 8: a header named mma.sync.cuh put the pattern into a .file line of the PTX that
    # --compile-only and an untraced grade read whole; nor may an inline-asm string hold it
    named = '.file 1 "/sub/mma.sync.cuh"\n.visible .entry k()\n{\n\tret;\n}\n'
    assert missing_ptx(spec, named) != [] and missing_ptx(spec, named.replace("ret;", 'ret; .pragma "mma.sync";')) != []
    assert missing_ptx(spec, named.replace("ret;", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {};")) == []


def test_a_file_is_under_a_folder_only_by_its_absolute_path():
    assert ptx.under("/sub/kernel.cu", Path("/sub"))
    assert not ptx.under("/subway/kernel.cu", Path("/sub")) and not ptx.under("kernel.cu", Path("/sub"))


def test_source_checks_read_every_source_of_the_folder(tmp_path):
    """A forbidden word in a helper header or module is found, with its path and line; hidden
    folders (notebook checkpoints) are not sources."""
    (tmp_path / "kernel.cu").write_text('#include "helper.cuh"\n')
    (tmp_path / "solution.py").write_text("def solve(a, b): pass\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helper.cuh").write_text("// fine\n#include <cutlass/gemm.h>\n")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "kernel-checkpoint.cu").write_text("cublas\n")
    assert [str(f.relative_to(tmp_path)) for f in source_files(tmp_path)] == ["kernel.cu", "solution.py",
                                                                               "lib/helper.cuh"]
    spec = replace(spec_of("ex12_gemm_tensorcore"), forbidden=(r"\bcutlass\b",), required=())
    assert static_check(spec, tmp_path) == (
        "forbidden", "lib/helper.cuh:2: uses 'cutlass', which this exercise forbids ([features] forbidden)")


def test_string_literals_the_compiler_does_not_write_make_a_module_unreadable():
    """Red-team finding (sixth session, second pass): ptxas accepts a .pragma string spanning lines,
    so `.pragma "\\n/*\\n"` from inline asm opened what a line-based reader took for a comment and
    hid real kernels; another string carried "mma.sync" for required_ptx. The compiler's own strings
    (.file paths, "nounroll", "used_bytes_mask N") are fine; any other string, and a .file index
    named twice, make the module unreadable, and a string's text never counts as code."""
    assert ptx.parse(MODULE).unreadable == ""
    assert ptx.parse('.pragma "nounroll";\n.pragma "used_bytes_mask 4095";\n' + MODULE).unreadable == ""
    hidden = MODULE.replace(".visible .entry decoy(", '.pragma "\n/*\n";\n.visible .entry decoy(')
    assert ptx.parse(hidden).unreadable == '.pragma "'
    assert ptx.parse(MODULE + '.pragma "mma.sync";\n').unreadable == '.pragma "mma.sync";'
    twice = MODULE.replace('.file 3 "/odd//path/x.cuh"', '.file 2 "/sub/kernel.cu"')
    assert "index 2 named twice" in ptx.parse(twice).unreadable
    inside = MODULE.replace(".loc 1 9 1\n", '.loc 1 9 1\n.pragma "nounroll";\n')
    assert ptx.parse(inside).unreadable == "" and "nounroll" not in ptx.parse(inside).code_of({"decoy"})


@pytest.mark.parametrize("directive", [
    '#include "third_party/kernels.inl"',          # a suffix that is not a CUDA source's
    '#include ".vendor/kernels.inl"',              # a hidden folder
    '%:include "third_party/kernels.inl"',         # the digraph of #
    '#include_next "third_party/kernels.inl"',     # NVRTC takes include_next too
    '#inc\\\nlude "third_party/kern\\\nels.inl"',  # backslash-newlines, spliced before directives
    '# /* c */ include <third_party/kernels.inl>',   # a comment, the <> form (the folder is on the path)
    '#if 0\n#include "third_party/kernels.inl"\n#endif',   # every include counts: reading too much is safe
])
def test_every_file_kernel_cu_includes_is_read_by_the_word_check(tmp_path, directive):
    """Red-team finding (twenty-fifth session): a forbidden library's code in a file the word check
    did not read (another suffix, a hidden folder) came in through kernel.cu's #include, and was
    graded as the submission's own. Every file of the folder that the CUDA sources include, by
    any spelling of the directive and through other included files, is read."""
    (tmp_path / "kernel.cu").write_text(directive + '\nextern "C" __global__ void probe(int* p) {}\n')
    (tmp_path / "solution.py").write_text("def solve(a, b): pass\n")
    for folder in ("third_party", ".vendor"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "kernels.inl").write_text('#include "more.txt"\n')
        (tmp_path / folder / "more.txt").write_text("// fine\nnamespace vllm {}\n#include \"kernels.inl\"\n")   # a cycle
    spec = replace(spec_of("ex12_gemm_tensorcore"), forbidden=(r"\bvllm\b",), required=())
    kind, message = static_check(spec, tmp_path)
    assert kind == "forbidden" and message.endswith("more.txt:2: uses 'vllm', which this exercise forbids "
                                                    "([features] forbidden)")
    listed = [str(f.relative_to(tmp_path)) for f in source_files(tmp_path)]
    assert listed[:2] == ["kernel.cu", "solution.py"] and len(listed) == 4 and any(f.endswith("more.txt") for f in listed)


def test_a_word_split_by_backslash_newlines_is_found_on_its_line(tmp_path):
    (tmp_path / "kernel.cu").write_text('// one\nextern "C" __global__ void k() {}\nint x = cu\\\ntla\\\nss_v;\nint y;\n')
    (tmp_path / "solution.py").write_text("def solve(a, b): pass\n")
    spec = replace(spec_of("ex12_gemm_tensorcore"), forbidden=(r"\bcutlass\w*",), required=())
    assert static_check(spec, tmp_path) == (
        "forbidden", "kernel.cu:3: uses 'cutlass_v', which this exercise forbids ([features] forbidden)")


def test_a_computed_include_is_refused_and_a_file_outside_the_folder_is_not_followed(tmp_path):
    """An #include of a macro names no file the grader can check: refused with the file, line and
    fix. An include that resolves outside the folder (CUDA's headers) is the compiler's business."""
    (tmp_path / "solution.py").write_text("def solve(a, b): pass\n")
    (tmp_path / "kernel.cu").write_text('#include <cuda_fp16.h>\n#include "../outside.cuh"\n'
                                        '#define F "x.inl"\n#include F\n')
    (tmp_path.parent / "outside.cuh").write_text("namespace vllm {}\n")
    spec = replace(spec_of("ex12_gemm_tensorcore"), forbidden=(r"\bvllm\b",), required=())
    assert static_check(spec, tmp_path) == (
        "bad_submission", 'kernel.cu:4: #include F names no file (a computed include): the grader checks every file '
        'kernel.cu includes; fix: write the file name, #include "file.cuh"')
    (tmp_path / "kernel.cu").write_text('#include <cuda_fp16.h>\n#include "../outside.cuh"\n')
    assert static_check(spec, tmp_path) is None
    assert [f.name for f in source_files(tmp_path)] == ["kernel.cu", "solution.py"]
