set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/compare-dpdk.png'
set title 'driver -> device, relative to DPDK virtio-user -> DPDK net_vhost' . "\n" . 'split ring, poll mode, 5 interleaved runs of 3 s; 2026-12-02; load 1.79; cross-CPU far'
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
"pps tx 64 B" 1 0.67328 1.33193 1.48345 1.46676 1.49933 0.95526 0.520579 0.971974 1.83808 1.50594 1.8512
"pps rx 64 B" 1 0.97415 1.5493 1.19248 1.16905 1.77454 1.23564 1.20146 2.65801 1.49115 1.47834 2.62114
"stream tx 64 B" 1 0.674731 1.00356 1.24231 1.02192 1.25957 0.677399 0.628288 0.95732 1.24812 1.15166 1.43644
"stream rx 64 B" 1 0.797605 1.54927 1.19854 1.17075 1.76604 1.23953 1.20615 2.4855 1.51687 1.49673 2.63679
"stream tx 1518 B" 1 0.988668 1.01564 2.24091 2.21174 2.27215 2.52549 2.50559 2.53368 2.99694 2.95674 3.04851
"stream rx 1518 B" 1 0.69165 1.14036 0.914358 0.905997 1.28442 1.86711 1.55698 2.18523 2.05528 1.73565 2.32391
EOD
plot $data using 2:3:4:xtic(1) title 'DPDK->DPDK', $data using 5:6:7 title 'uvnet->DPDK', $data using 8:9:10 title 'DPDK->uvnetd', $data using 11:12:13 title 'uvnet->uvnetd', $data using ($0 + (0 - 1.5) / 5.0):4:(sprintf('%.2f', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 1.5) / 5.0):7:(sprintf('%.2f', $5)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (2 - 1.5) / 5.0):10:(sprintf('%.2f', $8)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (3 - 1.5) / 5.0):13:(sprintf('%.2f', $11)) with labels offset 0,0.6 font ',8' notitle
