set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/default-cpu.png'
set title 'CPU per side by frame size (stream)' . "\n" . 'uvnet driver -> uvnetd, split ring, poll mode; 2026-12-01; load 1.62; cross-CPU far'
set ylabel 'fraction of one core'
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
set yrange [0:1.05]
$data << EOD
"64 B" 0.999373 0.999373 0.999373 0.99622 0.99622 0.99622 0.995343 0.995343 0.995343 0.995343 0.995343 0.995343
"1518 B" 0.996243 0.996243 0.996243 0.99309 0.99309 0.99309 0.99525 0.99525 0.99525 1 1 1
"65535 B" 0.999684 0.999684 0.999684 0.999684 0.999684 0.999684 0.997806 0.997806 0.997806 1 1 1
EOD
plot $data using 2:3:4:xtic(1) title 'tx: driver', $data using 5:6:7 title 'tx: device', $data using 8:9:10 title 'rx: driver', $data using 11:12:13 title 'rx: device', $data using ($0 + (0 - 1.5) / 5.0):4:(sprintf('%.3g', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 1.5) / 5.0):7:(sprintf('%.3g', $5)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (2 - 1.5) / 5.0):10:(sprintf('%.3g', $8)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (3 - 1.5) / 5.0):13:(sprintf('%.3g', $11)) with labels offset 0,0.6 font ',8' notitle
