set terminal pngcairo size 1400,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/seeds.png'
set title 'each seed switch: on / off, uvnet next to the seed thread' . "\n" . 'uvnet -> uvnetd, 5 interleaved runs of 3 s each; 2026-11-30; load 1.36; cross-CPU near'
set ylabel 'on / off (SD, p50: lower is better)'
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
set yrange [0:*]
set xtics rotate by 40 right font ',10'
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb '#555555' front
$data << EOD
"000 rx mrg Gb/s" 0.962655 0.962655 0.962655 1.071 1.071 1.071
"000 rx big Gb/s" 0.95034 0.95034 0.95034 1.071 1.071 1.071
"002 2-seg pps Mpps" 1.34318 1.34318 1.34318 1.16 1.16 1.16
"003 rx MTU Gb/s" 1.92698 1.92698 1.92698 1.581 1.581 1.581
"001/4 zc 4K Gb/s" 0.715324 0.715324 0.715324 1.508 1.508 1.508
"001/4 zc 4K SD" 1.39708 1.39708 1.39708 0.178 0.178 0.178
"001/4 zc 16K Gb/s" 1.26729 1.26729 1.26729 1.028 1.028 1.028
"001/4 zc 16K SD" 0.785045 0.785045 0.785045 0.272 0.272 0.272
"001/4 zc 64K Gb/s" 0.843484 0.843484 0.843484 1.009 1.009 1.009
"001/4 zc 64K SD" 0.938472 0.938472 0.938472 0.302 0.302 0.302
"001/4 zc 4K dirty Gb/s" 1.00726 1.00726 1.00726 NaN NaN NaN
"001/4 zc 4K dirty SD" 1.15702 1.15702 1.15702 NaN NaN NaN
"001/4 zc 64K dirty Gb/s" 0.751358 0.751358 0.751358 NaN NaN NaN
"001/4 zc 64K dirty SD" 1.10792 1.10792 1.10792 NaN NaN NaN
"004 rr trans/s" 1.11206 1.11206 1.11206 NaN NaN NaN
"004 rr p50" 0.838381 0.838381 0.838381 NaN NaN NaN
EOD
plot $data using 2:3:4:xtic(1) title 'uvnet (median)', $data using 5:6:7 title 'the seed thread', $data using ($0 + (0 - 0.5) / 3.0):4:(sprintf('%.2f', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 0.5) / 3.0):7:(sprintf('%.2f', $5)) with labels offset 0,0.6 font ',8' notitle
