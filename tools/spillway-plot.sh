#!/bin/sh
# A timeline picture from a CSV that spillway-stat PID --record wrote:
#   tools/spillway-plot.sh TIMELINE.csv TIMELINE.png
# Two panels over time, every axis from zero, legends beside the data:
#   - where the tracked bytes are, stacked: on the GPU (the streaming
#     window included), then in host memory above it;
#   - bytes per second crossing PCIe, by kind: streamed into the window
#     and promoted, written back and demoted, and read in place by
#     kernels (estimated from their arguments).
# Rates are the difference of two successive samples over the time
# between them. Needs gnuplot (Debian: gnuplot-nox). Exit 2 bad usage,
# else gnuplot's.
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
set terminal pngcairo size 1000,760 font ",10"
set output png
MiB = 1048576.
set multiplot layout 2,1 title "spillway timeline"
set xlabel "seconds"
set xrange [0:*]
set yrange [0:*]
set key outside right top vertical Left reverse
set grid
set style fill solid 0.5 noborder

set ylabel "MiB"
set title "where the tracked bytes are (stacked)"
plot csv using 1:(0):(column("device_bytes")/MiB) with filledcurves lc rgb "#2b6cb0" \
         title "on the GPU", \
     csv using 1:(column("device_bytes")/MiB):((column("device_bytes") + column("host_bytes"))/MiB) \
         with filledcurves lc rgb "#dd8452" title "in host memory"

# rate(): this sample's increase of a column over the time since the
# last one; each curve keeps its previous sample in its own variables.
set ylabel "MiB/s"
set title "bytes crossing PCIe, per second"
t1 = -1; t2 = -1; t3 = -1
plot csv using 1:(r = t1 >= 0 && $1 > t1 ? \
                  (column("bytes_streamed") + column("bytes_promoted") - v1) / ($1 - t1) / MiB : NaN, \
                  t1 = $1, v1 = column("bytes_streamed") + column("bytes_promoted"), r) \
         with lines lw 2 lc rgb "#2b6cb0" title "streamed and promoted", \
     csv using 1:(r = t2 >= 0 && $1 > t2 ? \
                  (column("bytes_written_back") + column("bytes_demoted") - v2) / ($1 - t2) / MiB : NaN, \
                  t2 = $1, v2 = column("bytes_written_back") + column("bytes_demoted"), r) \
         with lines lw 2 lc rgb "#dd8452" title "written back and demoted", \
     csv using 1:(r = t3 >= 0 && $1 > t3 ? \
                  (column("bytes_zero_copy_estimated") - v3) / ($1 - t3) / MiB : NaN, \
                  t3 = $1, v3 = column("bytes_zero_copy_estimated"), r) \
         with lines lw 2 lc rgb "#55a868" title "read in place (estimated)"
unset multiplot
GNUPLOT
