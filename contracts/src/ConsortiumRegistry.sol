// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

interface IPartyChannel {
    function head()
        external
        view
        returns (bool published, uint64 round, uint64 firstBlock, uint64 lastBlock, uint16 nChunks, bytes32 hash, uint32 epoch, uint64 deployedAt);
}

/// @title ConsortiumRegistry — the certification authority of an MCACS consortium (DAFed-LDA paper §7.1).
/// @notice The admin (the CA) admits members with their account address and X25519 public key,
/// records each member's channel contract and keeps the channel-peer access matrix CP
/// (CP[owner][reader] = 1: reader may read owner's channel, paper Def. 4). Every change emits an event.
/// CP here is *authorisation*; confidentiality is cryptographic (wrapped channel keys), because
/// every EVM node operator can read all storage and calldata.
contract ConsortiumRegistry {
    struct Member {
        string partyId;
        bytes32 x25519Public;
        address channel;
        bool admitted;
        bool suspended;
    }

    /// @notice A channel's head as readers see it (see PartyChannel.head).
    struct Head {
        address owner;
        address channel;
        bool published;
        uint64 round;
        uint64 firstBlock;
        uint64 lastBlock;
        uint16 nChunks;
        bytes32 hash;
        uint32 epoch;
        uint64 deployedAt;
    }

    address public immutable admin;
    uint64 public immutable deployBlock;
    address[] private memberList;
    mapping(address => Member) private memberOf;
    mapping(address => address[]) private readerList;
    mapping(address => mapping(address => uint256)) private readerSlot; // 1-based index into readerList
    /// @notice Bumped on every change of an owner's CP row; a channel key must be wrapped for the current version.
    mapping(address => uint64) public cpVersion;

    event MemberAdmitted(address indexed account, string partyId, bytes32 x25519Public);
    event MemberKeyChanged(address indexed account, bytes32 x25519Public);
    event MemberSuspended(address indexed account, bool suspended);
    event ChannelSet(address indexed account, address channel);
    event AccessChanged(address indexed owner, address indexed reader, bool allowed);

    error NotAdmin();
    error UnknownMember(address account);
    error AlreadyMember(address account);

    modifier onlyAdmin() {
        if (msg.sender != admin) revert NotAdmin();
        _;
    }

    constructor() {
        admin = msg.sender;
        deployBlock = uint64(block.number);
    }

    function admit(address account, string calldata partyId, bytes32 x25519Public) external onlyAdmin {
        if (memberOf[account].admitted) revert AlreadyMember(account);
        memberOf[account] = Member(partyId, x25519Public, address(0), true, false);
        memberList.push(account);
        emit MemberAdmitted(account, partyId, x25519Public);
    }

    function setX25519Public(address account, bytes32 x25519Public) external onlyAdmin {
        _member(account).x25519Public = x25519Public;
        emit MemberKeyChanged(account, x25519Public);
    }

    function setSuspended(address account, bool suspended) external onlyAdmin {
        _member(account).suspended = suspended;
        emit MemberSuspended(account, suspended);
    }

    function setChannel(address account, address channel) external onlyAdmin {
        _member(account).channel = channel;
        emit ChannelSet(account, channel);
    }

    function setAccess(address owner, address reader, bool allowed) external onlyAdmin {
        _member(owner);
        _member(reader);
        uint256 slot = readerSlot[owner][reader];
        if (allowed && slot == 0) {
            readerList[owner].push(reader);
            readerSlot[owner][reader] = readerList[owner].length;
        } else if (!allowed && slot != 0) {
            address[] storage list = readerList[owner];
            address last = list[list.length - 1];
            list[slot - 1] = last;
            readerSlot[owner][last] = slot;
            list.pop();
            delete readerSlot[owner][reader];
        } else {
            return; // no change, no event
        }
        cpVersion[owner] += 1;
        emit AccessChanged(owner, reader, allowed);
    }

    function isActive(address account) external view returns (bool) {
        Member storage m = memberOf[account];
        return m.admitted && !m.suspended;
    }

    /// @notice What a channel checks before its owner writes: is the owner active, which CP version is current.
    function writerState(address account) external view returns (bool active, uint64 version) {
        Member storage m = memberOf[account];
        return (m.admitted && !m.suspended, cpVersion[account]);
    }

    function canRead(address owner, address reader) external view returns (bool) {
        return readerSlot[owner][reader] != 0;
    }

    function readersOf(address owner) external view returns (address[] memory) {
        return readerList[owner];
    }

    function members() external view returns (address[] memory) {
        return memberList;
    }

    function member(address account)
        external
        view
        returns (string memory partyId, bytes32 x25519Public, address channel, bool admitted, bool suspended)
    {
        Member storage m = memberOf[account];
        return (m.partyId, m.x25519Public, m.channel, m.admitted, m.suspended);
    }

    /// @notice Heads of the channels `reader` may read (CP column of `reader`), in one call.
    function readableHeads(address reader) external view returns (Head[] memory out) {
        uint256 n = 0;
        for (uint256 i = 0; i < memberList.length; i++) {
            if (readerSlot[memberList[i]][reader] != 0 && memberOf[memberList[i]].channel != address(0)) n++;
        }
        out = new Head[](n);
        uint256 k = 0;
        for (uint256 i = 0; i < memberList.length; i++) {
            address owner = memberList[i];
            if (readerSlot[owner][reader] != 0 && memberOf[owner].channel != address(0)) out[k++] = _head(owner);
        }
    }

    /// @notice Heads of the channels of `owners` (zero channel address where a member has none yet).
    function heads(address[] calldata owners) external view returns (Head[] memory out) {
        out = new Head[](owners.length);
        for (uint256 i = 0; i < owners.length; i++) {
            out[i] = _head(owners[i]);
        }
    }

    function _head(address owner) private view returns (Head memory h) {
        h.owner = owner;
        h.channel = memberOf[owner].channel;
        if (h.channel == address(0)) return h;
        (h.published, h.round, h.firstBlock, h.lastBlock, h.nChunks, h.hash, h.epoch, h.deployedAt) =
            IPartyChannel(h.channel).head();
    }

    function _member(address account) private view returns (Member storage m) {
        m = memberOf[account];
        if (!m.admitted) revert UnknownMember(account);
    }
}
