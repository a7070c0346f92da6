#!/usr/bin/env bash
# The Spark connector jars the query tests run PySpark with (Delta and
# Iceberg readers for the PySpark version in tests/requirements.txt), kept
# once per machine in ${XDG_CACHE_HOME:-~/.cache}/tether-tools/spark-jars-<set>,
# fetched from Maven Central by mvn.
#   spark-jars.sh path      print the directory (filled or not)
#   spark-jars.sh classpath print the jars, comma-separated (spark.jars)
#   spark-jars.sh install   fetch them unless present
set -euo pipefail
JARS=(
  io.delta:delta-spark_2.13:4.0.0
  io.delta:delta-storage:4.0.0
  org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.0
)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/tether-tools/spark-jars-$(printf '%s\n' "${JARS[@]}" | sha256sum | cut -c1-12)"
jar_of() { local g a v; IFS=: read -r g a v <<<"$1"; echo "$dir/$a-$v.jar"; }
case "${1:-path}" in
  path) echo "$dir" ;;
  classpath)
    out=(); for j in "${JARS[@]}"; do out+=("$(jar_of "$j")"); done
    (IFS=,; echo "${out[*]}") ;;
  install)
    missing=0; for j in "${JARS[@]}"; do [ -f "$(jar_of "$j")" ] || missing=1; done
    [ "$missing" = 0 ] && exit 0
    command -v mvn >/dev/null || { echo "spark-jars: mvn is required" >&2; exit 1; }
    mkdir -p "$dir"
    repo="${MAVEN_REPO:-$HOME/.m2/repository}"
    for j in "${JARS[@]}"; do
      IFS=: read -r g a v <<<"$j"
      mvn -q dependency:get -Dartifact="$j" -Dtransitive=false >/dev/null
      cp "$repo/${g//.//}/$a/$v/$a-$v.jar" "$(jar_of "$j").tmp" && mv "$(jar_of "$j").tmp" "$(jar_of "$j")"
    done ;;
  *) echo "usage: $0 path|classpath|install" >&2; exit 2 ;;
esac
