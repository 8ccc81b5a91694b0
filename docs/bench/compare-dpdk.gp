set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/compare-dpdk.png'
set title 'driver -> device, relative to DPDK virtio-user -> DPDK net_vhost' . "\n" . 'split ring, poll mode, 3 interleaved runs of 3 s; 2026-11-30; load 3.97; cross-CPU far'
set ylabel 'ratio to DPDK->DPDK (median, min-max)'
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
"pps tx 64 B" 1 0.975363 1.092 1.24001 0.926552 1.31048 1.16512 0.769515 1.21793 0.94932 0.604392 0.954644
"pps rx 64 B" 1 0.935119 1.14316 1.40897 1.32094 2.018 1.3328 1.2688 1.37424 1.07763 1.01175 1.32076
"stream tx 64 B" 1 0.847147 1.05136 1.59266 1.04719 2.01722 1.85264 1.31668 2.51704 1.39919 1.32505 2.73909
"stream rx 64 B" 1 0.798986 1.06007 1.8069 1.58923 2.30479 2.25263 2.0196 2.8995 1.46341 1.40619 1.56253
"stream tx 1518 B" 1 0.889978 1.05515 1.62583 1.58766 1.78859 2.42944 2.4284 2.4656 1.63172 1.6315 1.73541
"stream rx 1518 B" 1 0.505307 1.09659 1.46349 0.856969 2.14021 0.252518 0.212857 0.37432 0.412966 0.379492 1.07368
EOD
plot $data using 2:3:4:xtic(1) title 'DPDK->DPDK', $data using 5:6:7 title 'uvnet->DPDK', $data using 8:9:10 title 'DPDK->uvnetd', $data using 11:12:13 title 'uvnet->uvnetd', $data using ($0 + (0 - 1.5) / 5.0):4:(sprintf('%.2f', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 1.5) / 5.0):7:(sprintf('%.2f', $5)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (2 - 1.5) / 5.0):10:(sprintf('%.2f', $8)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (3 - 1.5) / 5.0):13:(sprintf('%.2f', $11)) with labels offset 0,0.6 font ',8' notitle
