#!/bin/sh
# A timeline picture from a CSV that spillway-stat PID --record wrote:
#   tools/spillway-plot.sh TIMELINE.csv TIMELINE.png
# Three panels over time: where the tracked bytes are (GPU, host memory);
# bytes moved per second each way; bytes kernels read in place from host
# memory per second (estimated from their arguments). Rates are the
# difference of two successive samples over the time between them.
# Needs gnuplot (Debian: gnuplot-nox). Exit 2 bad usage, else gnuplot's.
set -u
if [ $# -ne 2 ]; then
    echo "usage: spillway-plot.sh TIMELINE.csv TIMELINE.png" >&2
    exit 2
fi
command -v gnuplot >/dev/null || { echo "spillway-plot: gnuplot not found (Debian: gnuplot-nox)" >&2; exit 2; }
[ -r "$1" ] || { echo "spillway-plot: cannot read $1" >&2; exit 2; }
exec gnuplot -e "csv='$1'; png='$2'" - <<'GNUPLOT'
set datafile separator ","
set datafile columnheaders
set terminal pngcairo size 900,900 font ",10"
set output png
MiB = 1048576.
set multiplot layout 3,1 title "spillway timeline"
set xlabel "seconds"
set key top left opaque
set grid

set ylabel "MiB"
set title "where the tracked bytes are"
plot csv using 1:(column("device_bytes")/MiB) with lines lw 2 title "on the GPU", \
     csv using 1:(column("host_bytes")/MiB) with lines lw 2 title "in host memory"

# rate(): this sample's increase of a column over the time since the last
# one; each curve keeps its previous sample in its own pair of variables.
set ylabel "MiB/s"
set title "bytes moved per second"
t1 = -1; t2 = -1
plot csv using 1:(r = t1 >= 0 && $1 > t1 ? (column("bytes_demoted") - v1) / ($1 - t1) / MiB : NaN, \
                  t1 = $1, v1 = column("bytes_demoted"), r) with lines lw 2 title "to host memory", \
     csv using 1:(r = t2 >= 0 && $1 > t2 ? \
                  (column("bytes_promoted") + column("bytes_streamed") - v2) / ($1 - t2) / MiB : NaN, \
                  t2 = $1, v2 = column("bytes_promoted") + column("bytes_streamed"), r) \
         with lines lw 2 title "to the GPU"

set title "bytes kernels read in place from host memory, per second (estimated)"
t3 = -1
plot csv using 1:(r = t3 >= 0 && $1 > t3 ? \
                  (column("bytes_zero_copy_estimated") - v3) / ($1 - t3) / MiB : NaN, \
                  t3 = $1, v3 = column("bytes_zero_copy_estimated"), r) \
         with lines lw 2 title "in-place reads"
unset multiplot
GNUPLOT
