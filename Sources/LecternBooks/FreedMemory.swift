import Glibc

/// glibc's malloc keeps the pages of its arenas that the program freed: after a big import lecternd would stay at
/// its peak. `malloc_trim` gives them back to the system. Its header (malloc.h) is not in Swift's Glibc module, so
/// it is looked up when first used.
enum FreedMemory {
    private typealias Trim = @convention(c) (Int) -> Int32

    private static let trim: Trim? = dlsym(nil, "malloc_trim").map { unsafeBitCast($0, to: Trim.self) }

    /// Gives the freed pages back to the system; nothing where the C library has no `malloc_trim`.
    static func giveBack() {
        _ = trim?(0)
    }
}
