"""The decision table (DESIGN.md), as one pure function. (implementation in progress)"""
