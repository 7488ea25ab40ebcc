// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

interface IMembership {
    function writerState(address account) external view returns (bool active, uint64 cpVersion);
}

/// @title PartyChannel — one party's ledger in MCACS (DAFed-LDA paper §7.1, Def. 4).
/// @notice Write control (the paper's endorsement policy): only `owner` publishes and rotates keys,
/// and only while the registry lists it as an active member. Payload chunks travel as calldata and
/// in the `Published` event; storage keeps only the head: latest complete round, a rolling hash of its
/// chunks (computed here, so it cannot disagree with the calldata) and its block range.
/// Read control is cryptographic: for each key epoch the owner stores the channel key wrapped for
/// every reader's X25519 key; removing a reader means a new epoch with a new key. The contract
/// refuses a publish sealed for an old epoch, or while the key is wrapped for a CP row the registry
/// has since changed, so nothing is ever published under a key a revoked reader holds.
contract PartyChannel {
    address public immutable owner;
    IMembership public immutable registry;
    uint64 public immutable deployBlock;

    // head: the latest complete round
    uint64 public latestRound;
    uint64 public latestFirstBlock;
    uint64 public latestBlock;
    uint16 public latestChunks;
    bytes32 public latestHash;
    // the round being published, chunk by chunk
    uint64 private pendingRound;
    uint64 private pendingFirstBlock;
    uint16 private pendingNext;
    bytes32 private pendingHash;
    bool public hasPublished;

    uint32 public keyEpoch;
    uint64 public keyCpVersion;
    mapping(uint32 => mapping(address => bytes)) private wrappedKeys;
    mapping(uint32 => address[]) private epochReaders;

    event Published(
        uint64 indexed round, uint16 chunk, uint16 nChunks, uint32 epoch, bytes32 rollingHash, bytes payload
    );
    event KeyRotated(uint32 indexed epoch, address[] readers);

    error NotOwner();
    error OwnerSuspended();
    error BadChunk(uint16 chunk, uint16 nChunks);
    error StaleRound(uint64 round, uint64 latest);
    error LengthMismatch();
    error StaleKeyEpoch(uint32 sealedFor, uint32 current);
    error KeyBehindCP(uint64 keyVersion, uint64 cpVersion);

    /// @dev Checks the caller is the active owner; returns the registry's CP version of the owner's row.
    function _activeOwner() private view returns (uint64 version) {
        if (msg.sender != owner) revert NotOwner();
        bool active;
        (active, version) = registry.writerState(owner);
        if (!active) revert OwnerSuspended();
    }

    constructor(address owner_, address registry_) {
        owner = owner_;
        registry = IMembership(registry_);
        deployBlock = uint64(block.number);
    }

    /// @notice Publish chunk `chunk` of `nChunks` of round `round`, sealed with the key of `epoch`.
    /// Chunks go in order; a new chunk 0 abandons an unfinished round. Rounds strictly increase.
    function publish(uint64 round, uint16 chunk, uint16 nChunks, uint32 epoch, bytes calldata payload) external {
        uint64 version = _activeOwner();
        if (epoch != keyEpoch) revert StaleKeyEpoch(epoch, keyEpoch);
        if (version != keyCpVersion) revert KeyBehindCP(keyCpVersion, version);
        if (nChunks == 0 || chunk >= nChunks) revert BadChunk(chunk, nChunks);
        if (hasPublished && round <= latestRound) revert StaleRound(round, latestRound);
        bytes32 h = keccak256(payload);
        if (chunk == 0) {
            pendingRound = round;
            pendingFirstBlock = uint64(block.number);
        } else {
            if (round != pendingRound || chunk != pendingNext) revert BadChunk(chunk, nChunks);
            h = keccak256(abi.encodePacked(pendingHash, h));
        }
        emit Published(round, chunk, nChunks, epoch, h, payload);
        if (chunk + 1 == nChunks) {
            latestRound = round;
            latestFirstBlock = pendingFirstBlock;
            latestBlock = uint64(block.number);
            latestChunks = nChunks;
            latestHash = h;
            hasPublished = true;
        } else {
            pendingHash = h;
            pendingNext = chunk + 1;
        }
    }

    /// @notice Start key epoch `keyEpoch + 1`, storing the new channel key wrapped for each reader.
    /// The caller wraps for the CP row it read; `cpVersion` is the registry's version of that row.
    function rotateKey(address[] calldata readers, bytes[] calldata wrapped, uint64 cpVersion) external {
        uint64 version = _activeOwner();
        if (readers.length != wrapped.length) revert LengthMismatch();
        if (cpVersion != version) revert KeyBehindCP(cpVersion, version);
        uint32 epoch = keyEpoch + 1;
        keyEpoch = epoch;
        keyCpVersion = version;
        for (uint256 i = 0; i < readers.length; i++) {
            wrappedKeys[epoch][readers[i]] = wrapped[i];
        }
        epochReaders[epoch] = readers;
        emit KeyRotated(epoch, readers);
    }

    function wrappedKey(uint32 epoch, address reader) external view returns (bytes memory) {
        return wrappedKeys[epoch][reader];
    }

    function readersAt(uint32 epoch) external view returns (address[] memory) {
        return epochReaders[epoch];
    }

    /// @notice Everything a reader needs in one call: the head and the current key epoch.
    function head()
        external
        view
        returns (bool published, uint64 round, uint64 firstBlock, uint64 lastBlock, uint16 nChunks, bytes32 hash, uint32 epoch, uint64 deployedAt)
    {
        return (hasPublished, latestRound, latestFirstBlock, latestBlock, latestChunks, latestHash, keyEpoch, deployBlock);
    }
}
