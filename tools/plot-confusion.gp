# A confusion matrix from evaluate --confusion FILE.csv: the images of each
# true class (rows) by predicted class (columns), as PNG and SVG, each
# class by the name in the file's headers. make
# plot-confusion CONFUSION=FILE.csv runs it with
#   tools/confusion-table FILE.csv TABLE.tsv
#   gnuplot -c tools/plot-confusion.gp TABLE.tsv FILE FILE.csv
# (gnuplot reads no CSV quoting, so the names come tab-separated), the
# last the title. Paths come as arguments, never as code; one that starts
# with '<' (to gnuplot, a command's output) is refused.
matrix = ARG1
out = ARG2
title = ARG3
do for [f in 'matrix out'] { if (value(f)[1:1] eq '<') { print value(f).': not a path this script takes'; exit status 2 } }
set datafile separator '\t'
stats matrix skip 1 using 2 nooutput
classes = STATS_records
# the largest count: a cell's colour is its count on a log scale, and its
# label is white where the colour is dark (past the scale's middle)
stats matrix matrix rowheaders columnheaders using 3 nooutput
largest = STATS_max > 1 ? STATS_max : 2
dark(count) = count > sqrt(largest)
set size ratio -1
set xlabel 'predicted class'
set ylabel 'true class'
set yrange [classes - 0.5:-0.5]
set xrange [-0.5:classes - 0.5]
set tics scale 0
if (classes > 20) { set xtics 10; set ytics 10 } else { set xtics 1 rotate by -35 noenhanced; set ytics 1 noenhanced }
set palette defined (0 'white', 1 '#c6dbef', 2 '#2171b5', 3 '#08306b')
set cblabel 'images'
set logscale cb
set cbrange [1:*]
do for [kind in 'pngcairo svg'] {
	if (kind eq 'pngcairo') { set terminal pngcairo size 720,640 font ',10'; set output out.'.png' } \
	else { set terminal svg size 720,640 font 'sans,10'; set output out.'.svg' }
	set title title noenhanced
	plot matrix matrix rowheaders columnheaders using 1:2:($3 > 0 ? $3 : NaN) with image notitle, \
	     '' matrix rowheaders columnheaders using 1:2:($3 > 0 && classes <= 20 && !dark($3) ? sprintf('%d', $3) : '') \
	     with labels font ',8' textcolor rgb '#000000' notitle, \
	     '' matrix rowheaders columnheaders using 1:2:($3 > 0 && classes <= 20 && dark($3) ? sprintf('%d', $3) : '') \
	     with labels font ',8' textcolor rgb '#ffffff' notitle
	unset output
}
