import CPulse
import Foundation
import Synchronization

/// libpulse, opened when the first connection is made rather than linked (see Sources/CPulse/shim.h): start-up
/// doesn't load it and its dependencies, 1.9 MB resident where no sound server runs (``PulseClient``). Calls go
/// through ``pulse``, typed as the header declares each function.
///
/// ```swift
/// try await LibPulse.load()                       // once, before the first call
/// let mainloop = pulse.pa_threaded_mainloop_new()
/// ```
enum LibPulse {
    /// The functions, or why libpulse can't be opened; opened the first time this is read.
    private static let loaded: Result<Functions, PulseError> = {
        let table = UnsafeMutablePointer<lectern_pulse>.allocate(capacity: 1)
        defer { table.deallocate() }
        if let failure = lectern_pulse_load(table) {
            return .failure(.connectionFailed("cannot load libpulse: \(String(cString: failure))"))
        }
        return .success(Functions(table: table.pointee))
    }()
    private static let opened = Atomic<Bool>(false)

    /// Opens libpulse unless it is already, on a thread of its own (loading a score of libraries blocks for a few
    /// milliseconds); throws when it can't be opened.
    static func load() async throws(PulseError) {
        if !opened.load(ordering: .acquiring) {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let thread = Thread {
                    Thread.current.name = "lectern-pulse"  // from inside, 15 bytes at most (Foundation on Linux)
                    _ = loaded
                    opened.store(true, ordering: .releasing)
                    done.resume()
                }
                thread.start()
            }
        }
        if case .failure(let error) = loaded { throw error }
    }

    /// The functions; only used once ``load()`` succeeded.
    static var functions: lectern_pulse {
        guard case .success(let functions) = loaded else { preconditionFailure("libpulse used before it was loaded") }
        return functions.table
    }

    // @unchecked Sendable: a table of C function pointers, written once before it is shared and never after.
    private struct Functions: @unchecked Sendable {
        let table: lectern_pulse
    }
}

/// libpulse's functions (``LibPulse``).
var pulse: lectern_pulse { LibPulse.functions }
