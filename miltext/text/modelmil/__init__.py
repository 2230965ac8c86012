"""Apple's model.mil dialect of MIL text, as the Core ML compiler writes it into an
.mlmodelc: its parser, its printer and the words it spells differently."""
