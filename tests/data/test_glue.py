"""Tests for the GLUE TSV readers: every task's layout, and clear errors."""

import pytest

from official_electra.data import glue

# One labelled and one test file per task, in the GLUE download script's layout.
_TASK_FILES = {
    "CoLA": (
        "gj04\t1\t\tThe boy ran.\ngj04\t0\t*\tRan boy the.\n",
        "index\tsentence\n0\tThe dog barked.\n1\tBarked dog.\n"),
    "SST-2": (
        "sentence\tlabel\na fine film \t1\na dull film \t0\n",
        "index\tsentence\n0\tgreat .\n1\tawful .\n"),
    "MRPC": (
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t11\t12\tHe said \"yes.\tHe agreed.\n0\t13\t14\tIt rained.\tIt was dry.\n",
        "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "0\t21\t22\tA cat.\tA feline.\n1\t23\t24\tUp.\tDown.\n"),
    "STS-B": (
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
        "sentence2\tscore\n"
        "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane.\tA jet.\t5.000\n"
        "1\tmain-captions\tMSRvid\t2012test\t0004\tnone\tnone\tA man.\tA dog.\t0.250\n",
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
        "sentence2\n"
        "0\tmain-captions\tMSRvid\t2012test\t0024\tnone\tnone\tA girl.\tA kid.\n"
        "1\tmain-captions\tMSRvid\t2012test\t0033\tnone\tnone\tA car.\tA road.\n"),
    "QQP": (
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        "7\t15\t16\tHow to cook?\tHow do I cook?\t1\n"
        "8\t17\t18\tWhy blue?\tWhere is Rome?\t0\n",
        "id\tquestion1\tquestion2\n0\tIs it?\tIs it so?\n1\tWho?\tWhat?\n"),
    "MNLI": (
        "index\tpromptID\tpairID\tgenre\ts1bp\ts2bp\ts1p\ts2p\tsentence1\t"
        "sentence2\tlabel1\tgold_label\n"
        "0\t31\t31n\tgov\t(a)\t(b)\t(a)\t(b)\tHe left.\tHe went.\tentailment\t"
        "entailment\n"
        "1\t32\t32c\tgov\t(a)\t(b)\t(a)\t(b)\tIt is red.\tIt is blue.\t"
        "contradiction\tcontradiction\n",
        "index\tpromptID\tpairID\tgenre\ts1bp\ts2bp\ts1p\ts2p\tsentence1\t"
        "sentence2\n"
        "0\t41\t41\tfiction\t(a)\t(b)\t(a)\t(b)\tShe sang.\tShe spoke.\n"
        "1\t42\t42\tfiction\t(a)\t(b)\t(a)\t(b)\tA box.\tA crate.\n"),
    "QNLI": (
        "index\tquestion\tsentence\tlabel\n"
        "0\tWho won?\tThe red team won.\tentailment\n"
        "1\tWhen?\tIt is green.\tnot_entailment\n",
        "index\tquestion\tsentence\n0\tWhy?\tBecause.\n1\tHow?\tSlowly.\n"),
    "RTE": (
        "index\tsentence1\tsentence2\tlabel\n"
        "0\tA man sleeps.\tA man rests.\tentailment\n"
        "1\tA man sleeps.\tA man runs.\tnot_entailment\n",
        "index\tsentence1\tsentence2\n0\tX is Y.\tY is X.\n1\tP.\tQ.\n"),
    "WNLI": (
        "index\tsentence1\tsentence2\tlabel\n"
        "0\tI put the cup on the table.\tThe cup is on it.\t1\n"
        "1\tThe cat chased it.\tThe dog chased.\t0\n",
        "index\tsentence1\tsentence2\n0\tHe saw her.\tShe was seen.\n"
        "1\tIt fell.\tThe vase fell.\n"),
}

_EXPECTED_LABELLED = {
    "CoLA": [("The boy ran.", None, "1"), ("Ran boy the.", None, "0")],
    "SST-2": [("a fine film ", None, "1"), ("a dull film ", None, "0")],
    "MRPC": [("He said \"yes.", "He agreed.", "1"),
             ("It rained.", "It was dry.", "0")],
    "STS-B": [("A plane.", "A jet.", 5.0), ("A man.", "A dog.", 0.25)],
    "QQP": [("How to cook?", "How do I cook?", "1"),
            ("Why blue?", "Where is Rome?", "0")],
    "MNLI": [("He left.", "He went.", "entailment"),
             ("It is red.", "It is blue.", "contradiction")],
    "QNLI": [("Who won?", "The red team won.", "entailment"),
             ("When?", "It is green.", "not_entailment")],
    "RTE": [("A man sleeps.", "A man rests.", "entailment"),
            ("A man sleeps.", "A man runs.", "not_entailment")],
    "WNLI": [("I put the cup on the table.", "The cup is on it.", "1"),
             ("The cat chased it.", "The dog chased.", "0")],
}

_EXPECTED_TEST_FIRST = {
    "CoLA": ("The dog barked.", None), "SST-2": ("great .", None),
    "MRPC": ("A cat.", "A feline."), "STS-B": ("A girl.", "A kid."),
    "QQP": ("Is it?", "Is it so?"), "MNLI": ("She sang.", "She spoke."),
    "QNLI": ("Why?", "Because."), "RTE": ("X is Y.", "Y is X."),
    "WNLI": ("He saw her.", "She was seen."),
}


def _write_task(glue_dir, task_name):
  labelled_text, test_text = _TASK_FILES[task_name]
  layout = glue.get_task_layout(task_name)
  task_dir = glue_dir / task_name
  task_dir.mkdir(parents=True)
  for split in ("train", *layout.dev_splits):
    (task_dir / f"{split}.tsv").write_text(labelled_text, encoding="utf-8")
  for split in layout.test_splits:
    (task_dir / f"{split}.tsv").write_text(test_text, encoding="utf-8")
  return task_dir


@pytest.mark.parametrize("task_name", glue.GLUE_TASK_NAMES)
def test_reads_each_task_layout(tmp_path, task_name):
  _write_task(tmp_path, task_name)
  layout = glue.get_task_layout(task_name)
  for split in ("train", *layout.dev_splits):
    examples = glue.read_split(str(tmp_path), task_name, split)
    assert [(e.text_a, e.text_b, e.label) for e in examples] == (
        _EXPECTED_LABELLED[task_name])
  for split in layout.test_splits:
    examples = glue.read_split(str(tmp_path), task_name, split)
    assert [e.example_id for e in examples] == ["0", "1"]
    assert (examples[0].text_a, examples[0].text_b) == (
        _EXPECTED_TEST_FIRST[task_name])
    assert all(e.label is None for e in examples)


def test_mnli_dev_layout_with_five_annotator_labels(tmp_path):
  path = tmp_path / "dev_matched.tsv"
  header = "\t".join(["c"] * 16)
  row = "\t".join(["0", "1", "1n", "g", "a", "b", "a", "b", "S1.", "S2.",
                   "neutral", "neutral", "entailment", "neutral", "neutral",
                   "neutral"])
  path.write_text(f"{header}\n{row}\n", encoding="utf-8")
  (example,) = glue.read_tsv_file(str(path), "MNLI", "dev_matched")
  assert (example.text_a, example.text_b, example.label) == (
      "S1.", "S2.", "neutral")


def test_wrong_column_count_names_file_and_line(tmp_path):
  path = tmp_path / "train.tsv"
  path.write_text("sentence\tlabel\ngood\t1\nno label here\n", encoding="utf-8")
  with pytest.raises(glue.GlueDataError, match=r"train\.tsv:3: expected 2 "):
    glue.read_tsv_file(str(path), "SST-2", "train")


def test_unknown_label_names_file_and_line(tmp_path):
  path = tmp_path / "dev.tsv"
  path.write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\tmaybe\n",
                  encoding="utf-8")
  with pytest.raises(glue.GlueDataError,
                     match=r"dev\.tsv:2: label 'maybe' is not one of "
                     r"entailment, not_entailment"):
    glue.read_tsv_file(str(path), "RTE", "dev")


def test_non_numeric_score_is_an_error(tmp_path):
  path = tmp_path / "train.tsv"
  row = "\t".join(["0", "g", "f", "y", "o", "s", "s", "A.", "B.", "high"])
  path.write_text("header\n" + row + "\n", encoding="utf-8")
  with pytest.raises(glue.GlueDataError, match=r"train\.tsv:2: score 'high'"):
    glue.read_tsv_file(str(path), "STS-B", "train")


def test_missing_file_and_unknown_names_are_clear_errors(tmp_path):
  with pytest.raises(glue.GlueDataError, match=r"no such file; pass --glue_dir"):
    glue.read_split(str(tmp_path), "RTE", "train")
  with pytest.raises(glue.GlueDataError, match=r"unknown GLUE task 'SST'.*SST-2"):
    glue.read_split(str(tmp_path), "SST", "train")
  with pytest.raises(glue.GlueDataError,
                     match=r"unknown split 'dev'.*dev_matched"):
    glue.read_split(str(tmp_path), "MNLI", "dev")


@pytest.mark.parametrize("task_name, train_rows, dev_rows, test_rows", [
    ("CoLA", 8551, 1043, 1063),
    ("SST-2", 67349, 872, 1821),
    ("MRPC", 3668, 408, 1725),
])
def test_real_glue_files(shared_data_dir, task_name, train_rows, dev_rows,
                         test_rows):
  glue_dir = str(shared_data_dir / "glue")
  layout = glue.get_task_layout(task_name)
  train = glue.read_split(glue_dir, task_name, "train")
  dev = glue.read_split(glue_dir, task_name, "dev")
  test = glue.read_split(glue_dir, task_name, "test")
  assert (len(train), len(dev), len(test)) == (train_rows, dev_rows, test_rows)
  assert {example.label for example in train} == set(layout.labels)
  assert [example.example_id for example in test] == [
      str(i) for i in range(test_rows)]
  assert all(example.text_a for example in train + dev + test)
  if task_name == "MRPC":
    assert all(example.text_b for example in train + dev + test)
