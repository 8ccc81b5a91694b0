set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced
set output 'docs/bench/compare-dpdk.png'
set title 'driver -> device, relative to DPDK virtio-user -> DPDK net_vhost' . "\n" . 'split ring, poll mode, 3 interleaved runs of 3 s; 2026-12-01; load 1.88; cross-CPU far'
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
"pps tx 64 B" 1 0.850792 1.08018 1.04742 0.861417 1.30463 0.815867 0.707375 1.12562 1.71646 1.10448 1.7568
"pps rx 64 B" 1 0.837565 1.00928 0.734435 0.677963 0.747384 1.17704 1.07893 1.2227 0.992907 0.960129 1.09474
"stream tx 64 B" 1 0.975997 1.27331 0.969844 0.934807 1.05198 0.980333 0.821256 1.18196 1.17844 1.04867 1.19693
"stream rx 64 B" 1 0.793613 1.17914 0.717266 0.708778 0.773698 1.42449 1.23541 1.42833 1.22211 1.2189 1.2729
"stream tx 1518 B" 1 0.770788 1.08918 1.41962 1.04327 1.6964 3.04854 2.84809 3.52396 3.02848 2.98815 3.04878
"stream rx 1518 B" 1 0.772718 1.07173 1.0978 1.05539 1.11587 1.05767 1.02841 1.1745 1.34296 1.06571 1.42103
EOD
plot $data using 2:3:4:xtic(1) title 'DPDK->DPDK', $data using 5:6:7 title 'uvnet->DPDK', $data using 8:9:10 title 'DPDK->uvnetd', $data using 11:12:13 title 'uvnet->uvnetd', $data using ($0 + (0 - 1.5) / 5.0):4:(sprintf('%.2f', $2)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (1 - 1.5) / 5.0):7:(sprintf('%.2f', $5)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (2 - 1.5) / 5.0):10:(sprintf('%.2f', $8)) with labels offset 0,0.6 font ',8' notitle, $data using ($0 + (3 - 1.5) / 5.0):13:(sprintf('%.2f', $11)) with labels offset 0,0.6 font ',8' notitle
