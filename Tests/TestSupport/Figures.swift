import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Key figures of a run, for the table `scripts/reliability.sh` prints: appended as `criterion<TAB>key<TAB>value`
/// lines to `$LECTERN_RELIABILITY_FIGURES` when it is set, and always printed. The reliability and route suites
/// record them.
public enum Figures {
    public static func record(_ criterion: String, _ key: String, _ value: String) {
        let line = "\(criterion)\t\(key)\t\(value)\n"
        print("reliability figure: \(criterion) \(key) = \(value)")
        guard let path = ProcessInfo.processInfo.environment["LECTERN_RELIABILITY_FIGURES"], !path.isEmpty else { return }
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = line.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
    }
}
