# A study's plots, as PNG and SVG in its results folder, from the tables
# resgen study report writes there (plot/) and the gradflow CSVs:
#   curves   per variant, the training loss of every logged row and the test
#            error of every evaluation against iterations, as the paper's
#            Figs. 1 and 6: the mean over the seeds as a line, their range
#            shaded; the loss on a log scale where it spans a decade or
#            more; each variant's learning rate below, in its colour
#   errors   final test error per variant: each seed a point, the median
#            with the seeds' range
#   gradflow log10 ||dL/dx_l|| / ||dL/dx_L|| against the unit l, at
#            initialisation (dashed) and after training (solid)
# tools/run-study runs it with
#   gnuplot -c tools/plot-study.gp results/NAME 'a b c' 3 '1 3'
# The folder comes as an argument, never as code; one that starts with '<'
# (to gnuplot, a command's output) is refused. Variant names are the study
# reader's words (a-z, 0-9, '-').
dir = ARG1
do for [f in 'dir'] { if (value(f)[1:1] eq '<') { print value(f).': not a path this script takes'; exit status 2 } }
variants = ARG2
seeds = int(ARG3)
trained = ARG4 # the variants (their numbers) whose trained gradient flow exists
n = words(variants)
# the scripts' folder, from the path gnuplot was given this one by
load ARG0[1:strlen(ARG0) - strlen('plot-study.gp')].'colours.gp'
train(i) = dir.'/plot/train-'.word(variants, i).'.dat'
test(i) = dir.'/plot/test-'.word(variants, i).'.dat'

# The training loss's span over every variant, seed and row: a log axis
# where it reaches a decade or more.
low = 1e300
high = 0
do for [i=1:n] {
	stats train(i) using 4:5 nooutput
	low = STATS_min_x < low ? STATS_min_x : low
	high = STATS_max_y > high ? STATS_max_y : high
}
logarithmic = low > 0 && high / low >= 10

set grid
do for [kind in 'pngcairo svg'] {
	# every panel from iteration 0: the rate's first row covers the iterations before it
	set xrange [0:*]
	extension = kind eq 'pngcairo' ? '.png' : '.svg'
	if (kind eq 'pngcairo') { set terminal pngcairo size 1200,620 font ',10' background '#ffffff' } \
	else { set terminal svg size 1200,620 font 'sans,10' background '#ffffff' }

	set output dir.'/curves'.extension
	set datafile separator whitespace
	set key top right noenhanced opaque
	set style fill transparent solid 0.18 noborder
	set multiplot
	# the two panels above, the learning rate in a strip below them
	set lmargin at screen 0.07
	set rmargin at screen 0.48
	set tmargin at screen 0.95
	set bmargin at screen 0.30
	set format x ''
	unset xlabel
	if (logarithmic) { set logscale y; set ylabel 'training loss (log scale)' } \
	else { unset logscale y; set ylabel 'training loss' }
	plot for [i=1:n] train(i) using 1:4:5 with filledcurves linecolor i notitle, \
		for [i=1:n] train(i) using 1:3 with lines linewidth 1.5 linecolor i title word(variants, i)
	unset logscale y
	set lmargin at screen 0.56
	set rmargin at screen 0.97
	set ylabel 'test error (%)'
	plot for [i=1:n] test(i) using 1:4:5 with filledcurves linecolor i notitle, \
		for [i=1:n] test(i) using 1:3 with linespoints linewidth 1.5 pointtype 7 pointsize 0.6 linecolor i \
		title word(variants, i)
	set format x '% h'
	set xlabel 'iteration'
	set ylabel 'learning rate'
	set logscale y
	set format y '%g'
	do for [left in '0.07 0.56'] {
		set lmargin at screen left + 0
		set rmargin at screen left + 0.41
		set tmargin at screen 0.25
		set bmargin at screen 0.08
		# each variant's own rate in its colour, the first the widest, so
		# that variants of one schedule show as nested stripes and a
		# variant of another schedule as a line of its own
		plot for [i=1:n] train(i) using 1:2 with fsteps linewidth 1 + 2 * (n - i) linecolor i notitle, \
			for [i=1:n] train(i) using (0):2:1:(0) every ::0::0 with vectors nohead \
			linewidth 1 + 2 * (n - i) linecolor i notitle
	}
	unset multiplot
	unset output
	set tmargin
	set bmargin
	set lmargin
	set rmargin
	unset logscale y
	set format y '% h'
	set format x '% h'

	set output dir.'/errors'.extension
	unset xlabel
	set ylabel 'final test error (%)'
	set xrange [-0.5:n - 0.5]
	set offsets 0, 0, graph 0.05, graph 0.05
	set xtics rotate by -20 noenhanced
	set key outside below center horizontal
	plot dir.'/plot/errors.dat' using 1:3:4:5:xtic(2) with yerrorbars linewidth 2 pointtype 5 \
		pointsize 1.5 linecolor 1 title 'median, range over the seeds', \
		for [k=6:5 + seeds] '' using 1:k with points pointtype 7 linecolor rgb '#707070' \
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
	# (an empty iteration still has its expressions read: one plot each way)
	if (words(trained) > 0) {
		plot for [i=1:n] dir.'/gradflow/'.word(variants, i).'-init.csv' using 2:(log10($7)) every ::1 \
			with lines dashtype 2 linecolor i title word(variants, i).' at initialisation', \
			for [k=1:words(trained)] dir.'/gradflow/'.word(variants, int(word(trained, k))).'-trained.csv' \
			using 2:(log10($7)) every ::1 with lines linewidth 1.5 linecolor int(word(trained, k)) \
			title word(variants, int(word(trained, k))).' trained'
	} else {
		plot for [i=1:n] dir.'/gradflow/'.word(variants, i).'-init.csv' using 2:(log10($7)) every ::1 \
			with lines dashtype 2 linecolor i title word(variants, i).' at initialisation'
	}
	unset output
}
