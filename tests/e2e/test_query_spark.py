"""The Spark reads `tether open KEY --for spark` and `tether query --for
spark` print, run by a local PySpark session (pyspark from PyPI, the Delta
and Iceberg connector jars from Maven Central, cached once per machine by
scripts/spark-jars.sh): a Delta table and an Iceberg table, each written by
its own library and committed twice, must read in Spark exactly as the
library reads the recorded version.  One SparkSession for the module."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from test_query import Stores, dataset, digest, expected, manifests, new_dataset, qenv  # noqa: F401

JARS = subprocess.run([str(ROOT / "scripts" / "spark-jars.sh"), "classpath"], capture_output=True, text=True,
                      check=True).stdout.strip()


@pytest.fixture(scope="module")
def spark():
    missing = [j for j in JARS.split(",") if not Path(j).exists()]
    pyspark = pytest.importorskip("pyspark") if os.environ.get("TETHER_REQUIRE_TOOLS") != "1" else __import__("pyspark")
    if missing or not shutil.which("java"):
        msg = f"Spark connector jars or java missing ({missing or 'java'}): scripts/spark-jars.sh install"
        if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    from pyspark.sql import SparkSession
    s = (SparkSession.builder.master("local[1]").appName("tether-query-tests")
         .config("spark.jars", JARS)
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "1")
         .getOrCreate())
    assert pyspark.__version__.startswith("4.0")
    yield s
    s.stop()


def spark_rows(df) -> list[dict]:
    return [r.asDict() for r in df.collect()]


def test_spark_snippets_read_the_recorded_versions(dataset, tether, qenv, spark):  # noqa: F811
    ds, st, one, two = dataset
    for rev, m in (("HEAD~1", one), ("HEAD", two)):
        for key in ("sales", "ev"):
            snip = tether.json("open", key, "-r", rev, "--for", "spark", cwd=ds, env=qenv)
            ns = {"spark": spark}
            exec(snip["snippet"], ns)
            assert digest(spark_rows(ns["df"])) == digest(expected(st, m, key)), (rev, key)
    # the whole dataset as one script: every relation registered under its key
    script = tether("query", "-r", "HEAD~1", "--for", "spark", cwd=ds, env=qenv).stdout
    ns = {}
    exec(script, ns)
    for key in ("sales", "ev"):
        got = spark_rows(spark.sql(f"SELECT * FROM `{key}`"))
        assert digest(got) == digest(expected(st, one, key)), key
    assert "# code (git): not a relation" in script
    # ducklake has no Spark reader: refused by name
    proc = tether("open", "lake", "--for", "spark", cwd=ds, env=qenv, check=False)
    assert proc.returncode == 1 and "Spark has no reader that addresses a ducklake state" in proc.stderr
