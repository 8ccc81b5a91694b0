set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/compare-dpdk.png'
set title 'driver -> device, relative to DPDK virtio-user -> DPDK net_vhost' . "\n" . 'split ring, poll mode, 5 interleaved runs of 3 s; 2026-12-02; load 2.67; cross-CPU near'
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
"pps tx 64 B" 1 0.498625 1.35673 1.74659 1.61118 2.11419 0.581671 0.509838 1.21644 1.75437 1.17402 2.17205
"pps rx 64 B" 1 0.984811 1.65582 1.25021 0.800029 1.59829 1.53262 0.793271 1.6673 1.42066 1.1983 1.48448
"stream tx 64 B" 1 0.464248 1.4831 1.10514 1.0302 2.51018 0.467634 0.445946 1.51562 1.91722 1.07291 2.33375
"stream rx 64 B" 1 0.980839 1.19502 0.961275 0.932435 1.51332 0.833074 0.793135 1.33962 0.558003 0.537599 1.47489
"stream tx 1518 B" 1 0.963192 1.47023 2.2158 1.95077 2.59485 1.17405 1.03228 2.48841 2.1851 1.97215 2.73425
"stream rx 1518 B" 1 0.749079 1.90775 0.827591 0.795019 1.35221 1.07568 1.06027 1.951 1.0059 0.86057 2.08577
EOD
plot $data using 2:3:4:xtic(1) title 'DPDK->DPDK', $data using 5:6:7 title 'uvnet->DPDK', $data using 8:9:10 title 'DPDK->uvnetd', $data using 11:12:13 title 'uvnet->uvnetd', $data using ($0 + (0 - 1.5) / 5.0):4:(sprintf('%.2f', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 1.5) / 5.0):7:(sprintf('%.2f', $5)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (2 - 1.5) / 5.0):10:(sprintf('%.2f', $8)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (3 - 1.5) / 5.0):13:(sprintf('%.2f', $11)) with labels offset 0,0.6 font ',8' notitle
