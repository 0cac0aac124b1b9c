//! Integer and floating-point text formatting shared by the codecs.
