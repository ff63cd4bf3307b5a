# A study's plots, as PNG and SVG in its results folder, from the tables
# resgen study report writes there (plot/) and the gradflow CSVs:
#   curves   training loss and test error against iterations, per variant
#            (the mean over its seeds), as the paper's Figs. 1 and 6
#   errors   final test error per variant: each seed a point, the median
#            with the seeds' range
#   gradflow log10 ||dL/dx_l|| / ||dL/dx_L|| against the unit l, at
#            initialisation (dashed) and after training (solid)
# tools/run-study runs it with
#   gnuplot -c tools/plot-study.gp results/NAME 'a b c' 3
# The folder comes as an argument, never as code; one that starts with '<'
# (to gnuplot, a command's output) is refused. Variant names are the study
# reader's words (a-z, 0-9, '-').
dir = ARG1
do for [f in 'dir'] { if (value(f)[1:1] eq '<') { print value(f).': not a path this script takes'; exit status 2 } }
variants = ARG2
seeds = int(ARG3)
set grid
n = words(variants)
do for [kind in 'pngcairo svg'] {
	extension = kind eq 'pngcairo' ? '.png' : '.svg'
	if (kind eq 'pngcairo') { set terminal pngcairo size 1100,440 font ',10' } \
	else { set terminal svg size 1100,440 font 'sans,10' }

	set output dir.'/curves'.extension
	set datafile separator whitespace
	set key top right noenhanced
	set xlabel 'iteration'
	set multiplot layout 1,2
	set ylabel 'training loss'
	plot for [i=1:n] dir.'/plot/curves-'.word(variants, i).'.dat' using 1:2 \
		with linespoints linecolor i title word(variants, i)
	set ylabel 'test error (%)'
	plot for [i=1:n] dir.'/plot/curves-'.word(variants, i).'.dat' using 1:3 \
		with linespoints linecolor i title word(variants, i)
	unset multiplot
	unset output

	set output dir.'/errors'.extension
	set xlabel 'variant'
	set ylabel 'final test error (%)'
	set xrange [-0.5:n - 0.5]
	set offsets 0, 0, graph 0.05, graph 0.05
	set xtics rotate by -20 noenhanced
	set key outside below center horizontal
	plot dir.'/plot/errors.dat' using 1:3:4:5:xtic(2) with yerrorbars linewidth 2 pointtype 5 \
		pointsize 1.5 title 'median, range over the seeds', \
		for [k=6:5 + seeds] '' using 1:k with points pointtype 7 linecolor rgb '#808080' \
		title (k == 6 ? 'each seed' : '')
	unset output
	unset xrange
	unset offsets
	set xtics norotate autofreq

	set output dir.'/gradflow'.extension
	set datafile separator ','
	set xlabel 'unit l (input side on the left)'
	set ylabel 'log10 ||dL/dx_l|| / ||dL/dx_L||'
	set key outside right top noenhanced
	plot for [i=1:n] dir.'/gradflow/'.word(variants, i).'-init.csv' using 2:(log10($7)) every ::1 \
		with lines dashtype 2 linecolor i title word(variants, i).' at initialisation', \
		for [i=1:n] dir.'/gradflow/'.word(variants, i).'-trained.csv' using 2:(log10($7)) every ::1 \
		with lines linewidth 1.5 linecolor i title word(variants, i).' trained'
	unset output
}
