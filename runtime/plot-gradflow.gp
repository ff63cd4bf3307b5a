# Gradient flow from gradflow CSVs: log10 of ||dL/dx_l|| / ||dL/dx_L|| against
# the unit l, one line per file and measured iteration, as PNG and SVG.
# make plot-gradflow GRADFLOW='A.csv B.csv' OUT=NAME runs it with
#   gnuplot -e "files='A.csv B.csv'; out='NAME'" runtime/plot-gradflow.gp
set datafile separator ','
set grid
set xlabel 'unit l (input side on the left)'
set ylabel 'log10 ||dL/dx_l|| / ||dL/dx_L||'
set key outside right top noenhanced
iterations(f) = system("tail -n +2 ".f." | cut -d, -f1 | uniq | tr '\\n' ' '")
name(f) = system("basename ".f." .csv")
do for [kind in 'pngcairo svg'] {
	if (kind eq 'pngcairo') { set terminal pngcairo size 1100,480 font ',10'; set output out.'.png' } \
	else { set terminal svg size 1100,480 font 'sans,10'; set output out.'.svg' }
	plot for [f in files] for [it in iterations(f)] f using 2:($1 == it + 0 ? log10($7) : NaN) \
		every ::1 with lines linewidth 1.5 title name(f).' at iteration '.it
	unset output
}
