# One run's curves from its CSV log (train --log), as PNG and SVG: the loss
# and the error against iterations, the training curves from every row
# (the mean over the iterations since the row before), the validation and
# test points from the evaluations; the loss on a log scale where it spans
# a decade or more; the learning rate below. make plot LOG=FILE.csv runs it
# with
#   gnuplot -c tools/plot-log.gp FILE.csv FILE
# A log of an older resgen (no val_loss column) gave an evaluation row's
# training columns over the iterations since the evaluation before: its
# training curve takes only the rows between evaluations, or every row
# where no such rows were written.
# Paths come as arguments, never as code; one that starts with '<' (to
# gnuplot, a command's output) is refused.
log = ARG1
out = ARG2
do for [f in 'log out'] { if (value(f)[1:1] eq '<') { print value(f).': not a path this script takes'; exit status 2 } }
load ARG0[1:strlen(ARG0) - strlen('plot-log.gp')].'colours.gp'
set datafile separator ','
# which log: the fifth column's name, and whether it has training rows
stats log using (fifth = columnhead(5), 1) nooutput
one_meaning = fifth eq 'val_loss'
test_loss = one_meaning ? 7 : 5
test_error = one_meaning ? 8 : 6
stats log skip 1 using (valid(test_error) ? 0 : 1) nooutput
training_rows = STATS_sum > 0
trained = one_meaning || !training_rows ? 1 : 0
# each series as a table of its own rows (iteration, loss, error %), so
# that the points of one are joined across the rows between them
set table $train separator comma
plot log skip 1 using 1:3:(100 * $4) with table if (trained || !valid(test_error))
stats log skip 1 using (one_meaning && valid(5) ? 1 : 0) nooutput
validated = STATS_sum > 0
if (validated) {
	set table $validation separator comma
	plot log skip 1 using 1:5:(100 * $6) with table if (one_meaning && valid(5))
}
set table $test separator comma
plot log skip 1 using 1:test_loss:(100 * column(test_error)) with table if (valid(test_error))
unset table
stats $train using 2 nooutput
logarithmic = STATS_min > 0 && STATS_max / STATS_min >= 10
stats log skip 1 using 2 nooutput
# a constant rate gets a range around it
lr_low = STATS_min == STATS_max ? STATS_min / 2 : STATS_min
lr_high = STATS_min == STATS_max ? STATS_max * 2 : STATS_max
# the series drawn, by the names of their tables
series = validated ? '$train $validation $test' : '$train $test'
colour(name) = name eq '$train' ? 1 : name eq '$test' ? 2 : 3
what(name) = name eq '$train' ? 'train' : name eq '$test' ? 'test' : 'validation'
set grid
# every panel from iteration 0: the rate's first row covers the iterations before it
set xrange [0:*]
do for [kind in 'pngcairo svg'] {
	if (kind eq 'pngcairo') { set terminal pngcairo size 1100,560 font ',10' background '#ffffff'; set output out.'.png' } \
	else { set terminal svg size 1100,560 font 'sans,10' background '#ffffff'; set output out.'.svg' }
	set multiplot title log noenhanced
	set key top right opaque
	set format x ''
	unset xlabel
	set lmargin at screen 0.08
	set rmargin at screen 0.48
	set tmargin at screen 0.90
	set bmargin at screen 0.30
	if (logarithmic) { set logscale y; set ylabel 'loss (log scale)' } else { unset logscale y; set ylabel 'loss' }
	do for [panel = 2:3] {
		plot for [name in series] name using 1:panel with linespoints linecolor colour(name) pointtype 7 \
			pointsize (name eq '$train' ? 0 : 0.6) title what(name).(panel == 2 ? ' loss' : ' error')
		unset logscale y
		set lmargin at screen 0.57
		set rmargin at screen 0.97
		set ylabel 'error (%)'
	}
	set format x '% h'
	set xlabel 'iteration'
	set ylabel 'learning rate'
	set logscale y
	set yrange [lr_low:lr_high]
	do for [left in '0.08 0.57'] {
		set lmargin at screen left + 0
		set rmargin at screen left + 0.40
		set tmargin at screen 0.25
		set bmargin at screen 0.08
		plot log using 1:2 with fsteps linewidth 1.5 linecolor rgb '#404040' notitle, \
			log skip 1 using (0):2:1:(0) every ::0::0 with vectors nohead linewidth 1.5 linecolor rgb '#404040' notitle
	}
	unset logscale y
	set autoscale y
	unset multiplot
	unset output
	set tmargin
	set bmargin
	set lmargin
	set rmargin
}
