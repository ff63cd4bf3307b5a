# Line colours the plot scripts share: they read on white and in print and
# stay apart for colour-blind readers (Okabe and Ito's palette, its yellow
# left out, with black and brown), in this order for variants 1, 2, ...
set linetype 1 linecolor rgb '#0072B2'
set linetype 2 linecolor rgb '#D55E00'
set linetype 3 linecolor rgb '#009E73'
set linetype 4 linecolor rgb '#CC79A7'
set linetype 5 linecolor rgb '#000000'
set linetype 6 linecolor rgb '#E69F00'
set linetype 7 linecolor rgb '#56B4E9'
set linetype 8 linecolor rgb '#8C564B'
set linetype cycle 8
