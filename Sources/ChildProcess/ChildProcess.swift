import Foundation

/// Starts a program as a child with every signal at its default and none blocked, whatever the daemon's threads
/// block or ignore (SIGTERM, SIGINT and SIGHUP, which it watches with dispatch sources; SIGPIPE, which libdbus
/// ignores): an exec keeps ignored signals ignored. `descriptors` are dup2'd onto the child's (new, child's), which
/// stay open across exec; anything opened close-on-exec stays out of it. `program` without a slash is looked for in
/// PATH. Returns the child's pid, or what went wrong.
public func spawnChild(_ program: String, arguments: [String], descriptors: [(Int32, Int32)]) -> Result<pid_t, ChildProcessError> {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (from, to) in descriptors { posix_spawn_file_actions_adddup2(&actions, from, to) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    var result = posix_spawnp(&pid, program, &actions, &attributes, argv, environ)
    // "Text file busy" passes: the program's file is still open for writing in a process another thread has just
    // forked and that has not yet reached its exec (its close-on-exec descriptors close only then), or is being
    // replaced. Tried again for up to 0.2 s.
    for _ in 0..<40 where result == ETXTBSY {
        usleep(5_000)
        result = posix_spawnp(&pid, program, &actions, &attributes, argv, environ)
    }
    guard result == 0 else { return .failure(ChildProcessError("\(program): \(String(cString: strerror(result)))")) }
    return .success(pid)
}

/// Why a child could not be started (the program and strerror's words).
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// How a child ended, from waitpid's status: "exit status 1", "killed by signal 9, Killed".
public func describeExit(_ status: Int32?) -> String {
    guard let status else { return "how, unknown" }
    let signal = status & 0x7f
    if signal == 0 { return "exit status \((status >> 8) & 0xff)" }
    return "killed by signal \(signal), \(String(cString: strsignal(signal)))"
}
