# Gradient flow from gradflow CSVs: log10 of ||dL/dx_l|| / ||dL/dx_L|| against
# the unit l, one line per file and measured iteration, as PNG and SVG.
# make plot-gradflow GRADFLOW='A.csv B.csv' OUT=NAME runs it with
#   gnuplot -c tools/plot-gradflow.gp NAME 'A.csv B.csv'
# Paths come as arguments, never as code, and no shell is run; one that
# starts with '<' (to gnuplot, a command's output) is refused.
out = ARG1
files = ARG2
do for [f in out.' '.files] { if (f[1:1] eq '<') { print f.': not a file name plot-gradflow takes'; exit status 2 } }
set datafile separator ','
set grid
set xlabel 'unit l (input side on the left)'
set ylabel 'log10 ||dL/dx_l|| / ||dL/dx_L||'
set key outside right top noenhanced
# A file's name less its folder and .csv
basename(f) = strstrt(f, '/') ? basename(f[strstrt(f, '/') + 1:]) : f
name(f) = basename(f)[strlen(basename(f)) - 3:] eq '.csv' ? basename(f)[:strlen(basename(f)) - 4] : basename(f)
# The iterations each file measured, in order: iterations[i] for word(files, i)
array iterations[words(files)]
do for [i = 1:words(files)] {
	list = ' '
	stats word(files, i) using (valid(1) ? (it = sprintf('%d', $1), \
		(strstrt(list, ' '.it.' ') == 0 ? list = list.it.' ' : 0)) : 0) nooutput
	iterations[i] = list
}
do for [kind in 'pngcairo svg'] {
	if (kind eq 'pngcairo') { set terminal pngcairo size 1100,480 font ',10'; set output out.'.png' } \
	else { set terminal svg size 1100,480 font 'sans,10'; set output out.'.svg' }
	plot for [i = 1:words(files)] for [it in iterations[i]] word(files, i) using 2:($1 == it + 0 ? log10($7) : NaN) \
		every ::1 with lines linewidth 1.5 title name(word(files, i)).' at iteration '.it
	unset output
}
