// lectern-bench: measures a release lecternd and, in the same run, mpv with the mpv-mpris plugin and VLC, over a
// private D-Bus. Usage and method: docs/benchmarks.md; normally run through scripts/bench.sh.
import Foundation

BenchCommand.run(CommandLine.arguments)
exit(0)
