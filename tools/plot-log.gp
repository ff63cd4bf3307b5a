# One run's curves from its CSV log (train --log): losses and errors against
# iterations, as PNG and SVG; the training curves from every row, the test
# points from the evaluations' (the training rows leave them empty). make plot LOG=FILE.csv runs it with
#   gnuplot -c tools/plot-log.gp FILE.csv FILE
# Paths come as arguments, never as code; one that starts with '<' (to
# gnuplot, a command's output) is refused.
log = ARG1
out = ARG2
do for [f in 'log out'] { if (value(f)[1:1] eq '<') { print value(f).': not a path this script takes'; exit status 2 } }
set datafile separator ','
set key autotitle columnhead
set grid
set xlabel 'iteration'
do for [kind in 'pngcairo svg'] {
	if (kind eq 'pngcairo') { set terminal pngcairo size 1000,420 font ',10'; set output out.'.png' } \
	else { set terminal svg size 1000,420 font 'sans,10'; set output out.'.svg' }
	set multiplot layout 1,2 title log noenhanced
	set ylabel 'loss'
	plot log using 1:3 with lines title 'train loss', '' using 1:5 with linespoints title 'test loss'
	set ylabel 'error (%)'
	plot log using 1:(100*$4) with lines title 'train error', '' using 1:(100*$6) with linespoints title 'test error'
	unset multiplot
	unset output
}
