import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs a body on a thread of its own whose file-system user is `nobody` (`setfsuid`: per thread on Linux, and it drops
/// the capabilities that let root past file permissions): files read as a daemon run by a user reads them, when the
/// tests run as root. The caller's thread waits: from async code, call it through ``offThePool(_:)``.
public enum AsUser {
    public static func nobody<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        typealias SetFSUID = @convention(c) (UInt32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setfsuid") else { throw CocoaError(.featureUnsupported) }
        let setfsuid = unsafeBitCast(symbol, to: SetFSUID.self)
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let previous = setfsuid(65534)
            result.withLock { $0 = Result { try body() } }
            _ = setfsuid(UInt32(previous))
            done.signal()
        }
        thread.start()
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
