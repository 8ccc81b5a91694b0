set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/default-throughput.png'
set title 'stream throughput by frame size' . "\n" . 'uvnet driver -> uvnetd, split ring, poll mode; 2026-12-01; load 1.62; cross-CPU far'
set ylabel 'Gb/s (log scale)'
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics lc rgb '#dddddd'
set key below horizontal
set offsets 0, 0, graph 0.08, 0
set linetype 1 lc rgb '#4477aa'
set linetype 2 lc rgb '#ee6677'
set linetype 3 lc rgb '#228833'
set linetype 4 lc rgb '#ccbb44'
set linetype 5 lc rgb '#66ccee'
set linetype 6 lc rgb '#aa3377'
set logscale y
set yrange [1:*]
$data << EOD
"64 B" 8.99333 8.99333 8.99333 5.79654 5.79654 5.79654
"1518 B" 179.351 179.351 179.351 59.0324 59.0324 59.0324
"65535 B" 1320.05 1320.05 1320.05 30.7402 30.7402 30.7402
EOD
plot $data using 2:3:4:xtic(1) title 'tx (driver -> device)', $data using 5:6:7 title 'rx (device -> driver)', $data using ($0 + (0 - 0.5) / 3.0):4:(sprintf('%.3g', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 0.5) / 3.0):7:(sprintf('%.3g', $5)) with labels offset 0,0.6 font ',8' notitle
