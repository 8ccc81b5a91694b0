set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/compare-dpdk.png'
set title 'driver -> device, relative to DPDK virtio-user -> DPDK net_vhost' . "\n" . 'split ring, poll mode, 5 interleaved runs of 3 s; 2026-12-03; load 1.86; cross-CPU far'
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
"pps tx 64 B" 1 0.968905 1.0104 2.11251 2.04754 2.12756 0.944261 0.917728 0.961536 2.14647 2.09445 2.16872
"pps rx 64 B" 1 0.929328 1.55901 1.20313 1.11442 1.62217 1.26973 1.21554 2.67731 1.52153 1.45344 2.51508
"stream tx 64 B" 1 0.972246 1.47665 1.62194 1.55001 1.77579 0.956271 0.917657 1.4211 1.99668 1.71965 2.04101
"stream rx 64 B" 1 0.942793 1.32118 1.20312 1.13973 1.4621 1.34271 1.31416 1.61399 1.69137 1.49035 1.83992
"stream tx 1518 B" 1 0.429497 1.01186 1.15339 1.08333 1.17116 1.18282 0.850895 1.62133 1.20971 1.1911 1.36062
"stream rx 1518 B" 1 0.995018 1.02175 1.05641 1.05077 1.13592 1.79128 1.71883 3.69484 1.89615 1.44097 3.68659
EOD
plot $data using 2:3:4:xtic(1) title 'DPDK->DPDK', $data using 5:6:7 title 'uvnet->DPDK', $data using 8:9:10 title 'DPDK->uvnetd', $data using 11:12:13 title 'uvnet->uvnetd', $data using ($0 + (0 - 1.5) / 5.0):4:(sprintf('%.2f', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 1.5) / 5.0):7:(sprintf('%.2f', $5)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (2 - 1.5) / 5.0):10:(sprintf('%.2f', $8)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (3 - 1.5) / 5.0):13:(sprintf('%.2f', $11)) with labels offset 0,0.6 font ',8' notitle
