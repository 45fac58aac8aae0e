"""The Python API: millinet.run, resolve and scenarios."""

import gc
import subprocess
import sys

import pandas as pd

import millinet
from millinet._toml import tomllib


def test_scenarios_have_names_and_descriptions():
    shipped = dict(millinet.scenarios())
    assert {"dumbbell", "dumbbell-switching"} <= set(shipped)
    assert all(shipped.values())


def test_run_returns_summary_and_dataframes():
    result = millinet.run("dumbbell", overrides={"duration_s": 1})
    assert result.out is None
    assert result.summary["flows"][0]["goodput_bps"] > 0
    assert {"flows", "goodput", "queues"} <= set(result.series)
    for frame in result.series.values():
        assert isinstance(frame, pd.DataFrame)
        assert {"run", "t"} <= set(frame.columns)


def test_run_accepts_a_path_and_writes_out(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(millinet.resolve("dumbbell", overrides={"duration_s": 0.2, "flows.0.cc": "newreno"}))
    result = millinet.run(path, out=tmp_path / "run")
    assert result.out == tmp_path / "run"
    assert (result.out / "summary.json").is_file()
    assert tomllib.loads(result.scenario_toml)["flows"][0]["cc"] == "newreno"


def test_dict_overrides_become_toml_literals():
    scenario = tomllib.loads(
        millinet.resolve("dumbbell", overrides={"flows.0.sack": False, "links.1.rate_bps": 2e8, "flows.0.cc": "newreno"})
    )
    flow = scenario["flows"][0]
    assert flow["sack"] is False and flow["cc"] == "newreno"
    assert scenario["links"][1]["rate_bps"] == 2e8


def test_series_without_out_stream_to_a_private_directory_removed_with_the_result():
    result = millinet.run("dumbbell", overrides={"duration_s": 0.5, "flows.0.cc": "newreno"})
    directory = result.series.directory
    assert sorted(p.name for p in directory.iterdir()) == ["flows.parquet", "goodput.parquet", "queues.parquet"]
    assert len(result.series["flows"]) == 501
    del result
    gc.collect()
    assert not directory.exists()


def test_a_run_does_not_import_pandas():
    # Streaming the series must not import pandas: its half-second import would land in the
    # timed run loop of every fresh process (issue 21). This process has pandas already.
    code = "import sys, millinet; millinet.run('dumbbell', overrides={'duration_s': 0.1}); print('pandas' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_a_star_sets_every_item_of_a_list():
    # `flows.*.cc` sets every flow's CC, and beats a TCP profile's CC as an indexed key would.
    resolved = tomllib.loads(millinet.resolve("multiflow", overrides={"flows.*.cc": "bbr", "flows.0.tcp_profile": "ns3-2017"}))
    assert [f["cc"] for f in resolved["flows"]] == ["bbr", "bbr"]
    profile_only = tomllib.loads(millinet.resolve("multiflow", overrides={"flows.0.tcp_profile": "ns3-2017"}))
    assert profile_only["flows"][0]["cc"] == "newreno"
