set terminal pngcairo size 1400,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/seeds.png'
set title 'each seed switch: on / off, uvnet next to the seed thread' . "\n" . 'uvnet -> uvnetd, 5 interleaved runs of 3 s each; 2026-12-01; load 1.18; cross-CPU far'
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
"000 rx mrg Gb/s" 1.00273 1.00273 1.00273 1.071 1.071 1.071
"000 rx big Gb/s" 0.974343 0.974343 0.974343 1.071 1.071 1.071
"002 2-seg pps Mpps" 1.16491 1.16491 1.16491 1.16 1.16 1.16
"003 rx MTU Gb/s" 1.71542 1.71542 1.71542 1.581 1.581 1.581
"001/4 zc 4K Gb/s" 1.18195 1.18195 1.18195 1.508 1.508 1.508
"001/4 zc 4K SD" 0.846326 0.846326 0.846326 0.178 0.178 0.178
"001/4 zc 16K Gb/s" 1.17208 1.17208 1.17208 1.028 1.028 1.028
"001/4 zc 16K SD" 0.858078 0.858078 0.858078 0.272 0.272 0.272
"001/4 zc 64K Gb/s" 2.27643 2.27643 2.27643 1.009 1.009 1.009
"001/4 zc 64K SD" 0.4363 0.4363 0.4363 0.302 0.302 0.302
"001/4 zc 4K dirty Gb/s" 0.906812 0.906812 0.906812 NaN NaN NaN
"001/4 zc 4K dirty SD" 0.833919 0.833919 0.833919 NaN NaN NaN
"001/4 zc 64K dirty Gb/s" 0.892053 0.892053 0.892053 NaN NaN NaN
"001/4 zc 64K dirty SD" 0.564426 0.564426 0.564426 NaN NaN NaN
"004 rr trans/s" 0.992635 0.992635 0.992635 NaN NaN NaN
"004 rr p50" 1.05173 1.05173 1.05173 NaN NaN NaN
EOD
plot $data using 2:3:4:xtic(1) title 'uvnet (median)', $data using 5:6:7 title 'the seed thread', $data using ($0 + (0 - 0.5) / 3.0):4:(sprintf('%.2f', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 0.5) / 3.0):7:(sprintf('%.2f', $5)) with labels offset 0,0.6 font ',8' notitle
